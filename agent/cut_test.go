package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search"
)

// TestCutoff: only a knob variant timed in full is given a cutoff, the
// best's full time plus cut_slower_pct.
func TestCutoff(t *testing.T) {
	full := &platform.Timing{MedianMS: 2}
	screened := &platform.Timing{MedianMS: 2, Budget: "screen 30%"}
	profiler := &platform.Timing{MedianMS: 2, Clock: platform.ClockProfiler}
	variant := &search.Variant{Label: "BLOCK=256", Source: "x"}
	for _, tc := range []struct {
		name string
		pct  float64
		best *platform.Timing
		slot search.Slot
		want float64
	}{
		{"variant", 3, full, search.Slot{Variant: variant}, 2.06},
		{"variant, full budget", 3, full, search.Slot{Variant: variant, Budget: 1}, 2.06},
		{"off", 0, full, search.Slot{Variant: variant}, 0},
		{"an LLM's rewrite", 3, full, search.Slot{}, 0},
		{"a screening rung", 3, full, search.Slot{Variant: variant, Budget: 0.3}, 0},
		{"a best timed by a screen", 3, screened, search.Slot{Variant: variant}, 0},
		{"a best not timed", 3, nil, search.Slot{Variant: variant}, 0},
		{"a best timed by the profiler's clock", 3, profiler, search.Slot{Variant: variant}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(configs.StrategyTune)
			cfg.StrategyConfig.CutSlowerPct = tc.pct
			l := &loop{pipeline: &pipeline{cfg: cfg}}
			h := search.NewHistory([]store.Candidate{{ID: "input", Timing: tc.best}}, 1)
			got := l.cutoff(view{h: h, bestID: "input"}, tc.slot)
			if got < tc.want-1e-9 || got > tc.want+1e-9 {
				t.Errorf("cutoff %g, want %g", got, tc.want)
			}
		})
	}
}

// cuttingSession records the cutoff of every verification and answers a
// verification with a cutoff of the source slow as the harness answers a
// quick timing slower than it, without verifying it; the rest go to the
// worker session.
type cuttingSession struct {
	*countingSession
	slow string

	mu      sync.Mutex
	cutoffs map[string]float64
}

func (s *cuttingSession) Verify(ctx context.Context, c platform.Candidate) (platform.Verdict, error) {
	s.mu.Lock()
	s.cutoffs[c.ID] = c.CutoffMS
	s.mu.Unlock()
	if c.Source == s.slow && c.CutoffMS > 0 {
		reason := "slower than the best: 5 of 5 quick timed calls took longer than the cutoff; not verified further"
		return platform.Verdict{Failure: platform.FailureSlower, Reason: reason,
			Checks: []platform.Check{{Name: platform.FailureSlower, Reason: reason}}}, nil
	}
	return s.countingSession.Verify(ctx, c)
}

// TestQuickCut: under cut_slower_pct, each knob variant is verified with the
// input's full time plus the percentage as its cutoff (the input itself and
// the gate with none); a variant cut as slower is recorded as such, is no
// correct kernel and no rejected one in the report, and the run goes on to
// promote the faster variant.
func TestQuickCut(t *testing.T) {
	e, in, cs := oneTuneRound(t, kernelDir(t), configs.ProfileFinal)
	in.Config.StrategyConfig.CutSlowerPct = 3
	sess := &cuttingSession{countingSession: cs, slow: candidateSource(t, "slow.py"), cutoffs: map[string]float64{}}
	in.Session = sess
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	all := mustCandidates(t, e.store, res.RunID)
	input := all[store.InputID]
	if input.Timing == nil || input.Timing.MedianMS <= 0 {
		t.Fatalf("the input was not timed: %+v", input)
	}
	if got := sess.cutoffs[store.InputID]; got != 0 {
		t.Errorf("the input kernel was verified with a cutoff of %g ms", got)
	}
	slow, ok := byDirection(all, 1, "ROWS=1")
	if !ok {
		t.Fatal("no ROWS=1 variant")
	}
	fast, ok := byDirection(all, 1, "FUSED=1")
	if !ok {
		t.Fatal("no FUSED=1 variant")
	}
	want := input.Timing.MedianMS * 1.03
	for _, c := range []store.Candidate{slow, fast} {
		if got := sess.cutoffs[c.ID]; got < want*(1-1e-9) || got > want*(1+1e-9) {
			t.Errorf("%s verified with cutoff %g ms, want the input's %g ms + 3%%", c.ID, got, input.Timing.MedianMS)
		}
	}
	if slow.Status != store.StatusRejected || failureOf(slow) != platform.FailureSlower || slow.Timing != nil {
		t.Errorf("the cut variant is %s (%s), timing %v", slow.Status, failureOf(slow), slow.Timing)
	}
	if !res.Improved || res.Best.ID != fast.ID {
		t.Errorf("best %s, want the fast variant %s", res.Best.ID, fast.ID)
	}
	report, err := os.ReadFile(filepath.Join(res.RunDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(report)
	for _, s := range []string{"1 cut after a quick timing slower than the best", "cut: slower than the best"} {
		if !strings.Contains(md, s) {
			t.Errorf("the report lacks %q", s)
		}
	}
	_, rejected, ok := strings.Cut(md, "## Rejected candidates")
	if !ok {
		t.Fatal("the report has no rejected candidates section")
	}
	rejected, _, _ = strings.Cut(rejected, "\n## ")
	if !strings.Contains(rejected, "None.") || strings.Contains(rejected, slow.ID) {
		t.Errorf("the cut variant is listed among the rejected candidates:%s", rejected)
	}
}
