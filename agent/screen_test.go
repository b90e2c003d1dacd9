package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search"
)

// TestAutotuneLoop: the autotune strategy screens the input and its
// variants in one worker call of the real cpu worker at the timed shape,
// hands the faster ones to full verification and timing (which rejects a
// variant wrong at the held-out shape of kagent.yaml), and promotes the
// fast variant on its full timing; once the search ends, its contenders are
// screened at the held-out shape in one more call. Every screen is written
// to the run dir, and the report lists the variants no other beats at both
// shapes.
func TestAutotuneLoop(t *testing.T) {
	dir := kernelDir(t)
	if err := os.WriteFile(filepath.Join(dir, "kagent.yaml"), []byte("shapes:\n  - {N: 3, D: 100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, dir)
	cfg := testConfig(search.Autotune)
	cfg.LLM.Model = ""
	cfg.MaxRounds = 3
	cfg.StrategyConfig.MaxVariants = 8
	cfg.StrategyConfig.Finalists = 2
	cfg.StrategyConfig.MaxNoImprovement = 1
	// Every variant that passed goes to the held-out shape, however the
	// cpu's times rank them.
	cfg.StrategyConfig.HeldOutTop = 10
	cfg.StrategyConfig.HeldOutWithinPct = 1e6
	in := e.input(cfg, nil)
	in.Tuner = fakeSpace{vs: []search.Variant{
		{Label: "ROWS=1", Source: candidateSource(t, "slow.py")},
		{Label: "FUSED=1", Source: candidateSource(t, "fast.py")},
		{Label: "BROKEN=1", Source: candidateSource(t, "broken.py")},
		// Right at the timed shape only.
		{Label: "SHAPED=1", Source: strings.Replace(candidateSource(t, "fast.py"), "    return s\n",
			"    if x.shape[0] != 256:\n        s.zero_()\n    return s\n", 1)},
	}}
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	cs := mustCandidates(t, e.store, res.RunID)
	best := cs[res.Best.ID]
	// SHAPED=1 screens as fast as FUSED=1 at the timed shape. Where it ranks
	// first, it is round 1's finalist, fails its full verification at the
	// held-out shape, and round 2 takes the next-ranked FUSED=1.
	_, shapedFirst := byDirection(cs, 1, "SHAPED=1")
	wantRound := 1
	if shapedFirst {
		if _, ok := byDirection(cs, 1, "FUSED=1"); !ok {
			wantRound = 2
		}
	}
	if !res.Improved || best.Direction != "tune: FUSED=1" || best.Round != wantRound {
		t.Fatalf("best %s (%s, round %d), want the round-%d FUSED=1 variant", best.ID, best.Direction, best.Round, wantRound)
	}
	if best.Timing == nil || best.Timing.Screening() || best.Verdict == nil || !best.Verdict.Passed {
		t.Fatalf("the best was not verified and timed in full: %+v %+v", best.Verdict, best.Timing)
	}
	if _, ok := byDirection(cs, 1, "BROKEN=1"); ok {
		t.Errorf("BROKEN=1 failed its screen but became a candidate")
	}
	if c, ok := byDirection(cs, 1, "SHAPED=1"); ok && (c.Verdict == nil || c.Verdict.Failure != "extra_shapes") {
		t.Errorf("SHAPED=1, wrong at the held-out shape, was not rejected there: %+v", c.Verdict)
	}
	if n := e.eventKinds()[EventScreened]; n != 2 {
		t.Errorf("%d screened events, want 2 (the input and its four variants, then the contenders at the held-out shape)", n)
	}
	data, err := os.ReadFile(filepath.Join(e.runDir, screensFile))
	if err != nil {
		t.Fatal(err)
	}
	// The walk's five screens, then its four that passed at the held-out
	// shape: three pass there, SHAPED=1 fails.
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d screens written, want 9:\n%s", len(lines), data)
	}
	for i, l := range lines {
		var d screenLine
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		switch {
		case d.HeldOut != (i >= 5):
			t.Errorf("line %d: held_out %v: %s", i, d.HeldOut, l)
		case i < 5 && (len(d.Shapes) != 0 || d.Passed == (d.Label == "BROKEN=1")):
			t.Errorf("the walk's screen of %s: %s", d.Label, l)
		case i >= 5 && d.Label == "SHAPED=1" && (d.Passed || d.Failure != "extra_shapes"):
			t.Errorf("the variant wrong at the held-out shape did not fail there: %s", l)
		case i >= 5 && d.Label != "SHAPED=1" && (!d.Passed || len(d.Shapes) != 1 || d.MedianMS <= 0):
			t.Errorf("%s has no time at the held-out shape beside its walk's: %s", d.Label, l)
		}
	}
	var rep struct {
		Screening *struct {
			Variants, Passed int
			Shapes           []string
			Pareto           []struct {
				Label, Source, Candidate string
				MedianMS                 float64   `json:"median_ms"`
				ShapesMS                 []float64 `json:"shapes_ms"`
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(e.runDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	sc := rep.Screening
	if sc == nil || sc.Variants != 5 || sc.Passed != 3 || len(sc.Shapes) != 1 || len(sc.Pareto) == 0 {
		t.Fatalf("report.json screening = %+v, want 5 screened, 3 passed, 1 held-out shape, a Pareto set", sc)
	}
	found := false
	for _, v := range sc.Pareto {
		if len(v.ShapesMS) != 1 || v.ShapesMS[0] <= 0 || v.MedianMS <= 0 {
			t.Errorf("Pareto variant %+v has no time at each shape", v)
		}
		if _, err := os.Stat(filepath.Join(e.runDir, v.Source)); err != nil {
			t.Errorf("Pareto variant %s: %v", v.Label, err)
		}
		found = found || v.Label == "FUSED=1" && v.Candidate == best.ID
	}
	if !found {
		t.Errorf("the promoted variant is not in the Pareto set with its candidate id %s: %+v", best.ID, sc.Pareto)
	}
	md, err := os.ReadFile(filepath.Join(e.runDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Screened variants") || !strings.Contains(string(md), "`FUSED=1`") {
		t.Errorf("report.md has no screened variants section:\n%s", md)
	}
	if !strings.Contains(string(md), "once the search ended, its 4 fastest within 1e+06% of the fastest: screen at 1 held-out shape(s)") {
		t.Errorf("report.md does not say how the held-out shape was screened:\n%s", md)
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

// TestContenders: the contenders screened at the held-out shapes are the
// held_out_top fastest that passed, each within held_out_within_pct of the
// fastest.
func TestContenders(t *testing.T) {
	passed := []screenLine{{Label: "a", MedianMS: 1.0}, {Label: "b", MedianMS: 1.1}, {Label: "c", MedianMS: 1.2}, {Label: "d", MedianMS: 1.24}}
	labels := func(ds []screenLine) string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Label)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		top  int
		pct  float64
		want string
	}{
		{heldOutTop, heldOutWithinPct, "a,b,c,d"},
		{heldOutTop, 15, "a,b"},
		{3, heldOutWithinPct, "a,b,c"},
		{1, heldOutWithinPct, "a"},
	} {
		if got := labels(contenders(passed, tc.top, tc.pct)); got != tc.want {
			t.Errorf("contenders(top %d, %g%%) = %s, want %s", tc.top, tc.pct, got, tc.want)
		}
	}
	if got := contenders(nil, heldOutTop, heldOutWithinPct); len(got) != 0 {
		t.Errorf("contenders of nothing = %v", got)
	}
}

// TestHeldOutDue: a held-out screen is due (and a final profile is then not
// staged before the acceptance gate, as that screen times) only where the
// problem has held-out shapes and a passed contender has not been screened
// there yet.
func TestHeldOutDue(t *testing.T) {
	art, err := newArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var sink strings.Builder
	l := &loop{pipeline: &pipeline{art: art, in: RunInput{Task: &kerneldir.Task{}}}}
	l.ev = &emitter{progress: &sink, now: time.Now}
	s := &screener{l: l, sc: &countingScreener{}}
	if s.heldOutDue() {
		t.Fatal("due with nothing screened and no held-out shapes")
	}
	if _, err := s.Screen(context.Background(), []search.Variant{{Label: "A=1", Source: "a = 1\n"}}); err != nil {
		t.Fatal(err)
	}
	if s.heldOutDue() {
		t.Fatal("due without held-out shapes")
	}
	l.in.Task.Options.Shapes = []map[string]any{{"N": 3}}
	if !s.heldOutDue() {
		t.Fatal("not due with a passed contender and held-out shapes")
	}
	if err := s.heldOut(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.heldOutDue() {
		t.Fatal("still due once every contender was screened at the held-out shapes")
	}
}
