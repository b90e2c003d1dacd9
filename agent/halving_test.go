package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/search"
)

// fakeSpace offers the slow and the fast test kernels as a knob space.
type fakeSpace struct{ vs []search.Variant }

func (f fakeSpace) Variants(ctx context.Context, source string, max int) ([]search.Variant, error) {
	return f.Space(ctx, source, max)
}

func (f fakeSpace) Space(_ context.Context, source string, max int) ([]search.Variant, error) {
	var out []search.Variant
	for _, v := range f.vs {
		if store.SourceHash(v.Source) != store.SourceHash(source) && len(out) < max {
			out = append(out, v)
		}
	}
	return out, nil
}

// TestHalvingLoop: rung 0 screens both variants with half the timing and
// promotes neither on it; rung 1 times the faster again in full, and it is
// promoted on that timing, which replaces the screening one.
func TestHalvingLoop(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(search.Halving)
	cfg.LLM.Model = ""
	cfg.MaxRounds = 4
	cfg.StrategyConfig.MaxVariants = 2
	cfg.StrategyConfig.Eta = 2
	cfg.StrategyConfig.MaxNoImprovement = 1
	in := e.input(cfg, nil)
	in.Tuner = fakeSpace{vs: []search.Variant{
		{Label: "ROWS=1", Source: candidateSource(t, "slow.py")},
		{Label: "FUSED=1", Source: candidateSource(t, "fast.py")},
	}}
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	cs := mustCandidates(t, e.store, res.RunID)
	best := cs[res.Best.ID]
	if !res.Improved || best.Direction != "tune: FUSED=1" || best.Round != 1 {
		t.Fatalf("best %s (%s), want the round-1 FUSED=1 variant", best.ID, best.Direction)
	}
	if best.Timing == nil || best.Timing.Screening() {
		t.Fatalf("the best's stored timing %+v is not a full timing", best.Timing)
	}
	slow, ok := byDirection(cs, 1, "ROWS=1")
	if !ok || slow.Timing == nil || !slow.Timing.Screening() || !strings.HasPrefix(slow.Timing.Budget, "screen 50") {
		t.Errorf("the slow variant, cut at rung 0, keeps its screening timing: %+v", slow.Timing)
	}
	evs, err := e.store.Events(context.Background(), res.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == storeEventPromotion && (ev.Round != 2 || ev.CandidateID != best.ID) {
			t.Errorf("promotion decision on %s in round %d: only rung 1's full timing may be decided on", ev.CandidateID, ev.Round)
		}
	}
	if !strings.Contains(res.StopReason, "no untried variant") {
		t.Errorf("stop %q: the bracket from the new best finds nothing untried", res.StopReason)
	}
}

// TestHalvingProfilesOnce: with every candidate profiled, a variant timed
// again at a later rung is placed again from its profile, not profiled a
// second time.
func TestHalvingProfilesOnce(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(search.Halving)
	cfg.LLM.Model = ""
	cfg.MaxRounds = 4
	cfg.StrategyConfig.MaxVariants = 2
	cfg.StrategyConfig.Eta = 2
	cfg.StrategyConfig.MaxNoImprovement = 1
	cfg.ProfileCandidates = configs.ProfileAll
	in := e.input(cfg, nil)
	in.Tuner = fakeSpace{vs: []search.Variant{
		{Label: "ROWS=1", Source: candidateSource(t, "slow.py")},
		{Label: "FUSED=1", Source: candidateSource(t, "fast.py")},
	}}
	cs := counting(t, e.sess)
	in.Session = cs
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	best := mustCandidates(t, e.store, res.RunID)[res.Best.ID]
	if !res.Improved || best.Direction != "tune: FUSED=1" || best.Timing == nil || best.Timing.Screening() {
		t.Fatalf("best %s (%s, %+v), want FUSED=1 with a full timing", best.ID, best.Direction, best.Timing)
	}
	seen := map[string]int{}
	for _, id := range cs.profiled {
		if seen[id]++; seen[id] > 1 {
			t.Errorf("%s profiled %d times (profiled: %v)", id, seen[id], cs.profiled)
		}
	}
	if seen[best.ID] != 1 {
		t.Errorf("the best %s was profiled %d times, want once (profiled: %v)", best.ID, seen[best.ID], cs.profiled)
	}
	if best.Metrics == nil || best.Metrics.TimeMS != best.Timing.MedianMS {
		t.Errorf("the best's metrics %+v are not placed at its full timing %+v", best.Metrics, best.Timing)
	}
}
