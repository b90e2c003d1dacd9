package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search"
)

// TestAutotuneLoop: the autotune strategy screens the input and both
// variants in one worker call of the real cpu worker, hands the faster
// ones to full verification and timing, and promotes the fast variant on
// its full timing; every screen is written to the run dir.
func TestAutotuneLoop(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(search.Autotune)
	cfg.LLM.Model = ""
	cfg.MaxRounds = 3
	cfg.StrategyConfig.MaxVariants = 8
	cfg.StrategyConfig.Finalists = 2
	cfg.StrategyConfig.MaxNoImprovement = 1
	in := e.input(cfg, nil)
	in.Tuner = fakeSpace{vs: []search.Variant{
		{Label: "ROWS=1", Source: candidateSource(t, "slow.py")},
		{Label: "FUSED=1", Source: candidateSource(t, "fast.py")},
		{Label: "BROKEN=1", Source: candidateSource(t, "broken.py")},
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
	if best.Timing == nil || best.Timing.Screening() || best.Verdict == nil || !best.Verdict.Passed {
		t.Fatalf("the best was not verified and timed in full: %+v %+v", best.Verdict, best.Timing)
	}
	if _, ok := byDirection(cs, 1, "BROKEN=1"); ok {
		t.Errorf("the variant that failed its screen became a candidate")
	}
	if n := e.eventKinds()[EventScreened]; n != 1 {
		t.Errorf("%d screened events, want 1 (one batch: the input and its three variants)", n)
	}
	data, err := os.ReadFile(filepath.Join(e.runDir, screensFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d screens written, want 4:\n%s", len(lines), data)
	}
	if !strings.Contains(string(data), `"label":"BROKEN=1","passed":false`) {
		t.Errorf("the broken variant's screen is not a failure:\n%s", data)
	}
}

// countingScreener is a platform.Screener that passes every variant.
type countingScreener struct{ calls, variants int }

func (c *countingScreener) Screen(_ context.Context, cs []platform.Candidate, _ platform.ScreenOptions) (platform.ScreenReport, error) {
	c.calls++
	c.variants += len(cs)
	rep := platform.ScreenReport{Method: "fake"}
	for i, x := range cs {
		if _, err := os.Stat(x.Path); err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, platform.Screening{ID: x.ID, Passed: true, MedianMS: float64(i + 1)})
	}
	return rep, nil
}

// TestScreenerReadsBackItsScreens: a variant screened once in a run (also
// by an earlier process of the run: a resumed run) is read back from the
// run dir, never screened again, so the strategy sees the same times.
func TestScreenerReadsBackItsScreens(t *testing.T) {
	dir := t.TempDir()
	art, err := newArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sink strings.Builder
	l := &loop{pipeline: &pipeline{art: art}}
	l.ev = &emitter{progress: &sink, now: time.Now}
	fake := &countingScreener{}
	s := &screener{l: l, sc: fake}
	vs := []search.Variant{{Label: "A=1", Source: "a = 1\n"}, {Label: "A=2", Source: "a = 2\n"}}
	first, err := s.Screen(context.Background(), vs)
	if err != nil {
		t.Fatal(err)
	}
	// A new screener over the same run dir (a resumed run).
	s2 := &screener{l: l, sc: fake}
	again, err := s2.Screen(context.Background(), append(vs, search.Variant{Label: "A=3", Source: "a = 3\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if fake.calls != 2 || fake.variants != 3 {
		t.Errorf("%d calls screening %d variants, want 2 calls and 3 variants (two read back)", fake.calls, fake.variants)
	}
	if !strings.Contains(sink.String(), "screened 2 variants") || !strings.Contains(sink.String(), "screened 1 variant ") {
		t.Errorf("progress lines:\n%s", sink.String())
	}
	if again[0] != first[0] || again[1] != first[1] || !again[2].Passed {
		t.Errorf("screens read back %+v, first %+v", again, first)
	}
}
