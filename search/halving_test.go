package search

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search/tune"
)

// fakeSpace lists n variants of any source.
type fakeSpace struct{ n int }

func (f fakeSpace) Variants(ctx context.Context, source string, max int) ([]Variant, error) {
	return f.Space(ctx, source, max)
}

func (f fakeSpace) Space(_ context.Context, source string, max int) ([]Variant, error) {
	var out []Variant
	for i := range min(f.n, max) {
		out = append(out, Variant{Label: fmt.Sprintf("v%d", i), Source: fmt.Sprintf("%s\nv = %d", source, i)})
	}
	return out, nil
}

func TestRungs(t *testing.T) {
	tests := []struct {
		n, eta, want int
		first        float64
	}{
		{n: 1, eta: 3, want: 1, first: 1},
		{n: 3, eta: 3, want: 2, first: 1.0 / 3},
		{n: 9, eta: 3, want: 3, first: 1.0 / 9},
		{n: 10, eta: 3, want: 4, first: 1.0 / 27},
		{n: 256, eta: 3, want: 5, first: 1.0 / 81}, // capped by MinBudget
		{n: 8, eta: 2, want: 4, first: 1.0 / 8},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n%d_eta%d", tt.n, tt.eta), func(t *testing.T) {
			got := Rungs(tt.n, tt.eta)
			if got != tt.want {
				t.Fatalf("Rungs(%d, %d) = %d, want %d", tt.n, tt.eta, got, tt.want)
			}
			if b := RungBudget(0, got, tt.eta); b < tt.first*0.999 || b > tt.first*1.001 {
				t.Errorf("rung 0 budget %g, want %g", b, tt.first)
			}
			if b := RungBudget(got-1, got, tt.eta); b != 1 {
				t.Errorf("last rung budget %g, want 1", b)
			}
		})
	}
}

// runBracket drives the strategy as the loop does: Slots, then the rung's
// timings (times gives each candidate's median for a budget), then Update.
// It returns each rung's slots.
func runBracket(t *testing.T, st Strategy, times func(id string, budget float64) float64) ([][]Slot, *State) {
	t.Helper()
	ctx := context.Background()
	s := &State{BestID: "r0c1"}
	h := hist(store.Candidate{ID: "r0c1", Source: "src", SourceHash: "h0", Status: store.StatusProfiled,
		Timing: &platform.Timing{MedianMS: 100}})
	var rungs [][]Slot
	for round := 1; round < 20; round++ {
		slots, err := st.Slots(ctx, s, h)
		if err != nil {
			t.Fatal(err)
		}
		if len(slots) == 0 {
			break
		}
		rungs = append(rungs, slots)
		var measured []store.Candidate
		for _, sl := range slots {
			id := sl.Retime
			if id == "" {
				id = store.CandidateID(round, sl.Index, 0)
			}
			tm := platform.Timing{MedianMS: times(id, sl.Budget)}
			if sl.Screening() {
				tm.Budget = "screen"
			}
			c := store.Candidate{ID: id, Round: round, Status: store.StatusProfiled, Timing: &tm, SourceHash: id}
			if sl.Retime != "" {
				c.Round = h.ByID[id].Round
			}
			h.ByID[id] = c
			h.Hashes[id] = id
			if sl.Retime == "" {
				measured = append(measured, c)
			}
		}
		st.Update(s, Outcome{Measured: measured}, h)
	}
	return rungs, s
}

func TestHalvingRungs(t *testing.T) {
	st, err := New(Halving, Settings{MaxVariants: 10, Eta: 3}, fakeSpace{n: 12})
	if err != nil {
		t.Fatal(err)
	}
	// Candidate r1c<i> takes i ms: r1c1 is the fastest at every budget.
	times := func(id string, _ float64) float64 {
		var r, c, a int
		fmt.Sscanf(id, "r%dc%d.%d", &r, &c, &a)
		if c == 0 {
			fmt.Sscanf(strings.TrimPrefix(id, fmt.Sprintf("r%d", r)), "c%d", &c)
		}
		return float64(c)
	}
	rungs, s := runBracket(t, st, times)
	if len(rungs) != 4 {
		t.Fatalf("%d rungs, want 4 (10 variants, eta 3)", len(rungs))
	}
	wantSizes := []int{10, 4, 2, 1}
	for i, r := range rungs {
		if len(r) != wantSizes[i] {
			t.Errorf("rung %d has %d slots, want %d", i, len(r), wantSizes[i])
		}
		for _, sl := range r {
			if want := RungBudget(i, 4, 3); sl.Budget != want {
				t.Errorf("rung %d slot %d budget %g, want %g", i, sl.Index, sl.Budget, want)
			}
			if (i == 0) != (sl.Variant != nil) || (i > 0) != (sl.Retime != "") {
				t.Errorf("rung %d slot %+v: rung 0 makes variants, later rungs retime", i, sl)
			}
		}
	}
	if rungs[3][0].Screening() {
		t.Error("the last rung screens; it must time in full")
	}
	b := s.Halving
	if !b.Done() || b.Root != "r0c1" {
		t.Fatalf("bracket %+v: want done, from r0c1", b)
	}
	wantKept := [][]string{{"r1c1", "r1c2", "r1c3", "r1c4"}, {"r1c1", "r1c2"}, {"r1c1"}, {"r1c1"}}
	for i, l := range b.Log {
		if !reflect.DeepEqual(l.Kept, wantKept[i]) {
			t.Errorf("rung %d kept %v, want %v", i, l.Kept, wantKept[i])
		}
	}
	if s.NoImprovement != 1 {
		t.Errorf("NoImprovement %d: only the last rung counts toward the plateau", s.NoImprovement)
	}
	// Done from the same best: nothing more to propose.
	if more, err := st.Slots(context.Background(), s, hist()); err != nil || len(more) != 0 {
		t.Errorf("a finished bracket from the best proposes %d slots (%v)", len(more), err)
	}
}

func TestHalvingReorders(t *testing.T) {
	st, _ := New(Halving, Settings{MaxVariants: 9, Eta: 3}, fakeSpace{n: 9})
	// Screening says r1c9 is fastest; longer timings say r1c2 is.
	times := func(id string, budget float64) float64 {
		if budget < 0.2 {
			if id == "r1c9" {
				return 1
			}
			if id == "r1c2" {
				return 2
			}
			return 5
		}
		if id == "r1c2" {
			return 1
		}
		return 3
	}
	_, s := runBracket(t, st, times)
	log := s.Halving.Log
	if got := log[0].Kept; !reflect.DeepEqual(got, []string{"r1c9", "r1c2", "r1c1"}) {
		t.Errorf("rung 0 kept %v", got)
	}
	if got := log[len(log)-1].Kept; !reflect.DeepEqual(got, []string{"r1c2"}) {
		t.Errorf("last rung kept %v, want r1c2 (the full timings decide)", got)
	}
}

func TestHalvingDeterministic(t *testing.T) {
	// A resumed round asks Slots again from the stored state: the same slots.
	st, _ := New(Halving, Settings{MaxVariants: 20, Eta: 2}, fakeSpace{n: 20})
	h := hist(store.Candidate{ID: "r0c1", Source: "src", SourceHash: "h0", Status: store.StatusProfiled})
	a, b := &State{BestID: "r0c1"}, &State{BestID: "r0c1"}
	sa, _ := st.Slots(context.Background(), a, h)
	sb, _ := st.Slots(context.Background(), b, h)
	if !reflect.DeepEqual(sa, sb) || !reflect.DeepEqual(a, b) {
		t.Error("Slots differ for the same state and history")
	}
}

func TestHalvingNeedsSpacer(t *testing.T) {
	tf := TunerFunc(func(context.Context, string, int) ([]Variant, error) { return nil, nil })
	if _, err := New(Halving, Settings{}, tf); err == nil {
		t.Error("halving built from a tuner that cannot enumerate a space")
	}
	if got := Check(Halving, Settings{Eta: 1}); len(got) != 1 || !strings.Contains(got[0], "eta") {
		t.Errorf("Check(eta 1) = %v", got)
	}
}

func pythonOrSkip(t *testing.T) string {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		py = "python3"
	}
	if _, err := exec.LookPath(py); err != nil {
		t.Skip("no python3")
	}
	return py
}

func TestSpace(t *testing.T) {
	py := pythonOrSkip(t)
	const src = `import triton
import triton.language as tl

@triton.jit
def _k(x, BLOCK: tl.constexpr):
    pass

def f(x):
    _k[(1,)](x, BLOCK=64, num_warps=4)
`
	tests := []struct {
		name string
		max  int
		want int
	}{
		{name: "all", max: 0, want: 10},
		{name: "capped", max: 5, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := KnobTuner{Finder: tune.Finder{Python: py}}.Space(context.Background(), src, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			// BLOCK 16..256 x warps 1..16 less the points with more
			// threads than tile elements (the current one among them):
			// 32x1, 64x1-2, 128x1-4, 256x1-8.
			if len(vs) != tt.want {
				t.Fatalf("%d variants, want %d: %v", len(vs), tt.want, labels(vs))
			}
			// One step, upward first: BLOCK=128 (num_warps=2 is one step down).
			if vs[0].Label != "BLOCK=128" || vs[1].Label != "num_warps=2" {
				t.Errorf("first variants %q: the nearest points come first, upward moves first", labels(vs[:2]))
			}
			again, _ := KnobTuner{Finder: tune.Finder{Python: py}}.Space(context.Background(), src, tt.max)
			if !reflect.DeepEqual(vs, again) {
				t.Error("the space's order is not deterministic")
			}
			for _, v := range vs {
				if strings.Contains(v.Label, "BLOCK=16 ") || v.Label == "BLOCK=16" {
					t.Errorf("%s: 16 elements for 128 threads breaks the constraint", v.Label)
				}
			}
		})
	}
}

func TestSpaceAutotune(t *testing.T) {
	py := pythonOrSkip(t)
	src, err := os.ReadFile("tune/testdata/autotune.py")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := KnobTuner{Finder: tune.Finder{Python: py}}.Space(context.Background(), string(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	var pins []string
	for _, v := range vs {
		if strings.HasPrefix(v.Label, "pin ") {
			pins = append(pins, v.Label)
			if strings.Count(v.Source, "triton.Config(") != 1 {
				t.Errorf("%s keeps %d configs, want 1", v.Label, strings.Count(v.Source, "triton.Config("))
			}
		}
	}
	want := []string{"pin _mv.configs[0]", "pin _mv.configs[1]", "pin _mv.configs[2]"}
	if !slices.Equal(pins, want) {
		t.Errorf("pins %v, want %v", pins, want)
	}
}

func labels(vs []Variant) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Label
	}
	return out
}
