package search

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search/tune"
)

// landscapeScreener screens from the measured times: a variant's screen
// time is its measured time; a setting the table lacks fails the screen.
type landscapeScreener struct {
	KnobTuner
	t       *testing.T
	land    softmaxLandscape
	batches []int
}

func (l *landscapeScreener) Screen(_ context.Context, vs []Variant) ([]Screen, error) {
	l.batches = append(l.batches, len(vs))
	out := make([]Screen, len(vs))
	for i, v := range vs {
		if ms, ok := l.land[l.land.setting(l.t, v.Source)]; ok {
			out[i] = Screen{Passed: true, MedianMS: ms}
		} else {
			out[i] = Screen{Failure: "correctness"}
		}
	}
	return out, nil
}

// TestAutotuneOnTheH200SoftmaxLandscape replays autotune over the times the
// H200 measured for the knob settings of the mistuned softmax (screens
// taken as those times, full timings too, promotion at 2% faster). The
// exhaustive search needed 95 variants verified and timed in full to find
// 8192 columns and 16 warps (1.66x); autotune must find it with at most
// two rounds of finalists in full, the rest screened. (The finalists after
// the first are within 3% of the fastest screen and untied: here only the
// fastest.)
func TestAutotuneOnTheH200SoftmaxLandscape(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 for the knob finder")
	}
	land := h200Softmax(t)
	sc := &landscapeScreener{KnobTuner: KnobTuner{Finder: tune.Finder{Python: py, CacheDir: t.TempDir()}}, t: t, land: land}
	st, err := New(Autotune, Settings{MaxVariants: 256, Finalists: 3}, sc)
	if err != nil {
		t.Fatal(err)
	}
	input, best, full, _, s := land.replay(t, st, 6, 1)
	screened := 0
	for _, n := range sc.batches {
		screened += n
	}
	t.Logf("best %s (%s) %.4f ms, %.3fx the input; %d screened in %d batches %v, %d in full",
		best.ID, land.setting(t, best.Source), best.MedianMS(), input.MedianMS()/best.MedianMS(), screened, len(sc.batches), sc.batches, full)
	if got := land.setting(t, best.Source); got[:8] != "8192,16," {
		t.Errorf("autotune ended at %s (%.4f ms), want the exhaustive best 8192,16 (0.1188 ms)", got, best.MedianMS())
	}
	if full > 6 {
		t.Errorf("autotune verified and timed %d variants in full, want at most two rounds of 3 finalists", full)
	}
	if len(s.Autotune.Screened) != screened {
		t.Errorf("the log holds %d screens, the screener did %d", len(s.Autotune.Screened), screened)
	}
}

// TestAutotuneSlots: finalists are the fastest screened variants faster than
// the best's own screen and close to the fastest, ties left out; a failed
// screen is never one; the walk moves to a
// faster variant and screens its space; a walk is not repeated from the
// same best, and a resumed state screens nothing again.
func TestAutotuneSlots(t *testing.T) {
	src := func(b int) string { return fmt.Sprintf("k[(1,)](x, BLOCK=%d)\n", b) }
	block := func(s string) int {
		var b int
		fmt.Sscanf(s, "k[(1,)](x, BLOCK=%d)", &b)
		return b
	}
	// The space of BLOCK=b: b/2 and 2b (16..1024).
	sp := spaceFunc(func(s string) []Variant {
		b := block(s)
		var out []Variant
		for _, n := range []int{b / 2, b * 2} {
			if n >= 16 && n <= 1024 {
				out = append(out, Variant{Label: fmt.Sprintf("BLOCK=%d", n), Source: src(n)})
			}
		}
		return out
	})
	// Faster with bigger blocks up to 256; 512 fails; 1024 slow. 128 is
	// within 3% of 256 and not tied with it: a finalist; 64 is not.
	ms := map[int]float64{16: 9, 32: 8, 64: 5, 128: 2.05, 256: 2, 1024: 7}
	sc := &fakeScreens{ms: func(s string) (float64, bool) { v, ok := ms[block(s)]; return v, ok }}
	st, err := NewAutotune(Settings{MaxVariants: 8, Finalists: 2}, struct {
		spaceFunc
		*fakeScreens
	}{sp, sc})
	if err != nil {
		t.Fatal(err)
	}
	in := store.Candidate{ID: "input", Source: src(32), SourceHash: store.SourceHash(src(32)), Status: store.StatusTimed, Timing: &platform.Timing{MedianMS: 8}}
	s := State{BestID: "input"}
	h := NewHistory([]store.Candidate{in}, 1)
	slots, err := st.Slots(context.Background(), &s, h)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sl := range slots {
		got = append(got, sl.Variant.Label)
		if sl.Parents[0] != "input" {
			t.Errorf("slot %d's parent is %v, want the best", sl.Index, sl.Parents)
		}
	}
	// 32 -> 64 -> 128 -> 256 (512 fails) : finalists 256, 128.
	if fmt.Sprint(got) != "[BLOCK=256 BLOCK=128]" {
		t.Errorf("finalists %v, want [BLOCK=256 BLOCK=128]", got)
	}
	if s.Autotune.RootMS != 8 || len(s.Autotune.Steps) != 4 || s.Autotune.Screened[store.SourceHash(src(512))] != -1 {
		t.Errorf("log %+v", s.Autotune)
	}
	n := sc.n
	walked := *s.Autotune
	// The same best again: no walk.
	if again, _ := st.Slots(context.Background(), &s, h); len(again) != 0 || sc.n != n {
		t.Errorf("a second walk from the same best: %d slots, %d screens", len(again), sc.n-n)
	}
	// A new best (BLOCK=256 promoted): its space is screened already.
	best := store.Candidate{ID: "r1c1", Source: src(256), SourceHash: store.SourceHash(src(256)), Status: store.StatusTimed, Timing: &platform.Timing{MedianMS: 2}}
	s.BestID = "r1c1"
	h2 := NewHistory([]store.Candidate{in, best}, 2)
	if next, err := st.Slots(context.Background(), &s, h2); err != nil || len(next) != 0 || sc.n != n {
		t.Errorf("walk from the new best: %d slots (%v), %d new screens; want none", len(next), err, sc.n-n)
	}
	// Finalists that all fail verification: the next-ranked take their place
	// (64, beating the root's 8), without counting toward the plateau.
	s = State{BestID: "input", Autotune: &walked}
	if len(s.Autotune.Next) != 1 || s.Autotune.Next[0].Label != "BLOCK=64" {
		t.Fatalf("next %+v, want [BLOCK=64]", s.Autotune.Next)
	}
	st.Update(&s, Outcome{}, h)
	if !s.Autotune.Retry || s.NoImprovement != 0 {
		t.Errorf("after rejected finalists: retry %v, no improvement %d", s.Autotune.Retry, s.NoImprovement)
	}
	retry, err2 := st.Slots(context.Background(), &s, h)
	if err2 != nil || len(retry) != 1 || retry[0].Variant.Label != "BLOCK=64" || sc.n != n {
		t.Errorf("retry slots %v (%v), %d new screens", retry, err2, sc.n-n)
	}
	st.Update(&s, Outcome{}, h)
	if s.Autotune.Retry || s.NoImprovement != 1 {
		t.Errorf("with nothing left: retry %v, no improvement %d", s.Autotune.Retry, s.NoImprovement)
	}
	for _, c := range []struct {
		ms     float64
		picked []float64
		want   bool
	}{
		{5, nil, true},
		{1.02, []float64{1}, true},   // within 3%, not tied
		{1.005, []float64{1}, false}, // tied with the first
		{1.04, []float64{1}, false},  // over 3% slower
		{1.025, []float64{1, 1.02}, false},
		{1.025, []float64{1, 1.01}, true},
	} {
		if got := finalist(c.ms, c.picked); got != c.want {
			t.Errorf("finalist(%v, %v) = %v, want %v", c.ms, c.picked, got, c.want)
		}
	}
	if got := MergeLabels("BLOCK=1024 num_warps=4", "num_warps=8 num_stages=2"); got != "BLOCK=1024 num_warps=8 num_stages=2" {
		t.Errorf("MergeLabels: %q", got)
	}
	if got := MergeLabels("pin k.configs[1]", "BLOCK=64"); got != "pin k.configs[1]; BLOCK=64" {
		t.Errorf("MergeLabels: %q", got)
	}
}

type spaceFunc func(string) []Variant

func (f spaceFunc) Variants(_ context.Context, s string, _ int) ([]Variant, error) { return f(s), nil }
func (f spaceFunc) Space(_ context.Context, s string, _ int) ([]Variant, error)    { return f(s), nil }

type fakeScreens struct {
	ms func(string) (float64, bool)
	n  int
}

func (f *fakeScreens) Screen(_ context.Context, vs []Variant) ([]Screen, error) {
	out := make([]Screen, len(vs))
	for i, v := range vs {
		f.n++
		if ms, ok := f.ms(v.Source); ok {
			out[i] = Screen{Passed: true, MedianMS: ms}
		} else {
			out[i] = Screen{Failure: "correctness"}
		}
	}
	return out, nil
}
