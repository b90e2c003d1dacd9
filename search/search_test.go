package search

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
)

func cand(id string, ms float64, hash string) store.Candidate {
	return store.Candidate{ID: id, SourceHash: hash, Status: store.StatusProfiled, Timing: &platform.Timing{MedianMS: ms}}
}

func hist(cs ...store.Candidate) History {
	h := History{ByID: map[string]store.Candidate{}, Hashes: map[string]string{}}
	for _, c := range cs {
		h.ByID[c.ID] = c
		h.Hashes[c.SourceHash] = c.ID
	}
	return h
}

func TestRegistry(t *testing.T) {
	names := Names()
	if !slices.IsSorted(names) {
		t.Errorf("names %v are not sorted", names)
	}
	for _, n := range []string{Greedy, Beam, Tune, Noop} {
		if !slices.Contains(names, n) {
			t.Errorf("names %v lack %s", names, n)
		}
	}
	for name, want := range map[string]bool{Greedy: true, Beam: true, Tune: false, Noop: false, "other": false} {
		if NeedsLLM(name) != want {
			t.Errorf("NeedsLLM(%q) = %v", name, !want)
		}
	}
	if Searches(Noop) || !Searches(Tune) {
		t.Error("noop runs no rounds; tune does")
	}
	for _, n := range Names() {
		if got, want := slices.Contains(Searching(), n), Searches(n); got != want {
			t.Errorf("Searching() has %s: %v; Searches(%s) = %v", n, got, n, want)
		}
	}
	for name, want := range map[string]bool{Tune: true, Greedy: false, Beam: false, Noop: false, "other": false} {
		if WithoutLLM(name) != want {
			t.Errorf("WithoutLLM(%q) = %v", name, !want)
		}
	}
	if _, err := New("gready", Settings{}, nil); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), strings.Join(Names(), ", ")) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := New(Tune, Settings{}, nil); !errors.Is(err, ErrNoTuner) {
		t.Errorf("tune without a tuner: %v", err)
	}
	if _, err := New(Noop, Settings{}, nil); err == nil {
		t.Error("noop built a strategy")
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of a name did not panic")
		}
	}()
	Register(Spec{Name: Greedy})
}

func TestChecksSayWhatToChange(t *testing.T) {
	got := Check(Beam, Settings{NumTopKernels: 0, NumBottlenecks: 2})
	if len(got) != 1 || !strings.Contains(got[0], "num_top_kernels is 0") {
		t.Errorf("beam check: %v", got)
	}
	if got := Check(Greedy, Settings{}); got != nil {
		t.Errorf("greedy has no settings to check: %v", got)
	}
	if got := Check("x", Settings{}); len(got) != 1 || !strings.Contains(got[0], `strategy "x" is not one of `+strings.Join(Names(), ", ")) {
		t.Errorf("unknown: %v", got)
	}
}

func TestBeamUpdate(t *testing.T) {
	b := beam{n: 3, m: 2, divergence: 50}
	tests := []struct {
		name     string
		state    State
		measured []store.Candidate
		history  History
		want     []string
	}{
		{
			name:     "best first, then by time",
			state:    State{BestID: "r1c2", Beam: []string{"input"}},
			history:  hist(cand("input", 10, "h0")),
			measured: []store.Candidate{cand("r1c1", 9, "h1"), cand("r1c2", 8, "h2"), cand("r1c3", 9.5, "h3")},
			want:     []string{"r1c2", "r1c1", "r1c3"},
		},
		{
			name:     "one kernel per normalised source",
			state:    State{BestID: "input"},
			history:  hist(cand("input", 10, "h0")),
			measured: []store.Candidate{cand("r1c1", 11, "h1"), cand("r1c2", 11.5, "h1"), cand("r1c3", 12, "h0")},
			want:     []string{"input", "r1c1"},
		},
		{
			name:     "diverged branches are dropped",
			state:    State{BestID: "r1c1", Beam: []string{"input"}},
			history:  hist(cand("input", 10, "h0")),
			measured: []store.Candidate{cand("r1c1", 4, "h1"), cand("r1c2", 5.9, "h2"), cand("r1c3", 6.1, "h3")},
			want:     []string{"r1c1", "r1c2"},
		},
		{
			name:     "equal times keep the earlier candidate",
			state:    State{BestID: "input"},
			history:  hist(cand("input", 10, "h0")),
			measured: []store.Candidate{cand("r2c1", 11, "h2"), cand("r1c10", 11, "h1"), cand("r1c9", 11, "h3")},
			want:     []string{"input", "r1c9", "r1c10"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.state
			b.Update(&s, Outcome{Measured: tc.measured}, tc.history)
			if !reflect.DeepEqual(s.Beam, tc.want) {
				t.Fatalf("beam %v, want %v", s.Beam, tc.want)
			}
		})
	}
}

func TestBeamSlots(t *testing.T) {
	b := beam{n: 2, m: 2}
	type pr struct {
		parent string
		rank   int
	}
	get := func(s State) []pr {
		ss, _ := b.Slots(context.Background(), &s, History{})
		var out []pr
		for i, x := range ss {
			if x.Index != i+1 {
				t.Errorf("slot %d has index %d", i, x.Index)
			}
			out = append(out, pr{x.Parent(), x.Rank})
		}
		return out
	}
	// Round 1: one kernel; the best takes the missing member's directions.
	if got, want := get(State{BestID: "input"}), []pr{{"input", 1}, {"input", 2}, {"input", 3}, {"input", 4}}; !reflect.DeepEqual(got, want) {
		t.Errorf("one member: %v, want %v", got, want)
	}
	if got, want := get(State{BestID: "a", Beam: []string{"a", "b", "a"}}), []pr{{"a", 1}, {"a", 2}, {"b", 1}, {"b", 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("two members: %v, want %v", got, want)
	}
}

func TestGreedySlotsAndPlateau(t *testing.T) {
	s := State{BestID: "r2c1"}
	ss, _ := greedy{}.Slots(context.Background(), &s, History{})
	if len(ss) != 1 || ss[0].Parent() != "r2c1" || ss[0].Rank != 1 {
		t.Fatalf("slots %+v", ss)
	}
	greedy{}.Update(&s, Outcome{}, History{})
	greedy{}.Update(&s, Outcome{}, History{})
	if s.NoImprovement != 2 {
		t.Fatalf("no improvement %d", s.NoImprovement)
	}
	greedy{}.Update(&s, Outcome{Promoted: true}, History{})
	if s.NoImprovement != 0 {
		t.Fatalf("a promotion did not reset the plateau counter")
	}
}

func TestTuneSkipsTriedVariantsAndAsksForMoreOnAPlateau(t *testing.T) {
	var asked []int
	tuner := TunerFunc(func(_ context.Context, src string, max int) ([]Variant, error) {
		asked = append(asked, max)
		var out []Variant
		for i := 0; i < max; i++ {
			out = append(out, Variant{Label: string(rune('a' + i)), Source: src + string(rune('a'+i))})
		}
		return out, nil
	})
	st, err := New(Tune, Settings{MaxVariants: 2}, tuner)
	if err != nil {
		t.Fatal(err)
	}
	best := store.Candidate{ID: "input", Source: "k", SourceHash: store.SourceHash("k")}
	tried := store.Candidate{ID: "r1c1", Source: "ka", SourceHash: store.SourceHash("ka")}
	h := hist(best, tried)
	s := State{BestID: "input", NoImprovement: 1}
	slots, err := st.Slots(context.Background(), &s, h)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asked, []int{4}) {
		t.Errorf("asked for %v variants, want 4 (2 x (1 round without improvement + 1))", asked)
	}
	if len(slots) != 2 || slots[0].Variant.Source != "kb" || slots[1].Variant.Source != "kc" || slots[1].Index != 2 {
		t.Fatalf("slots %+v: want kb and kc (ka was tried)", slots)
	}
	if slots[0].Parent() != "input" || slots[0].Rank != 0 {
		t.Errorf("a variant's parent is the best, rank 0: %+v", slots[0])
	}
	if _, err := st.Slots(context.Background(), &State{BestID: "gone"}, h); err == nil {
		t.Error("a best kernel missing from the history is an error")
	}
}

// A round that promotes nothing but times a variant faster than the best
// (below the promotion threshold) makes the next round explore from that
// variant; a promotion, a screening time or nothing faster explores from the
// best again.
func TestTuneWalksFromAFasterVariantThatWasNotPromoted(t *testing.T) {
	var bases []string
	tuner := TunerFunc(func(_ context.Context, src string, max int) ([]Variant, error) {
		bases = append(bases, src)
		return []Variant{{Label: "x", Source: src + "x"}}, nil
	})
	st, err := New(Tune, Settings{MaxVariants: 4}, tuner)
	if err != nil {
		t.Fatal(err)
	}
	timed := func(id, src string, ms float64, budget string) store.Candidate {
		return store.Candidate{ID: id, Source: src, SourceHash: store.SourceHash(src),
			Timing: &platform.Timing{MedianMS: ms, Budget: budget}}
	}
	best := timed("r2c5", "b", 0.130, "")
	slower := timed("r3c1", "s", 0.140, "")
	near := timed("r3c5", "n", 0.1282, "")
	nearer := timed("r3c2", "m", 0.1283, "")
	screened := timed("r3c9", "q", 0.100, "screen 11.1%")
	h := hist(best, slower, near, nearer, screened)

	s := State{BestID: "r2c5"}
	st.Update(&s, Outcome{Measured: []store.Candidate{slower, nearer, near, screened}}, h)
	if s.Walk != "r3c5" || s.NoImprovement != 1 {
		t.Fatalf("walk %q, plateau %d: want r3c5 (fastest full timing under the best), 1", s.Walk, s.NoImprovement)
	}
	slots, err := st.Slots(context.Background(), &s, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 1 || slots[0].Parent() != "r3c5" || bases[len(bases)-1] != "n" {
		t.Fatalf("slots %+v from %q: want a variant of the walk kernel r3c5", slots, bases)
	}

	st.Update(&s, Outcome{Promoted: true, Measured: []store.Candidate{near}}, h)
	if s.Walk != "" || s.NoImprovement != 0 {
		t.Errorf("after a promotion: walk %q, plateau %d; want none, 0", s.Walk, s.NoImprovement)
	}
	s = State{BestID: "r2c5", Walk: "r3c5"}
	st.Update(&s, Outcome{Measured: []store.Candidate{slower, screened}}, h)
	if s.Walk != "" {
		t.Errorf("nothing faster in full timing: walk %q, want none", s.Walk)
	}
	if slots, err = st.Slots(context.Background(), &s, h); err != nil || slots[0].Parent() != "r2c5" {
		t.Errorf("slots %+v (%v): want variants of the best again", slots, err)
	}
}
