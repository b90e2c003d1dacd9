package search

import (
	"context"
	"fmt"
	"slices"

	"github.com/kagent-kernels/kagent/agent/store"
)

// The shipped strategies' names.
const (
	Greedy = "greedy"
	Beam   = "beam_search"
	Tune   = "tune"
	Noop   = "noop"
)

func init() {
	Register(Spec{Name: Greedy, NeedsLLM: true, Searches: true,
		Summary: "rewrite the best kernel once a round (KernelAgent's default)",
		New:     func(Settings, Tuner) (Strategy, error) { return greedy{}, nil }})
	Register(Spec{Name: Beam, NeedsLLM: true, Searches: true,
		Summary: "keep the num_top_kernels fastest distinct kernels and explore num_bottlenecks directions from each",
		Check: func(s Settings) []string {
			var out []string
			if s.NumTopKernels < 1 {
				out = append(out, fmt.Sprintf("strategy_config.num_top_kernels is %d: beam search needs 1 or more", s.NumTopKernels))
			}
			if s.NumBottlenecks < 1 {
				out = append(out, fmt.Sprintf("strategy_config.num_bottlenecks is %d: beam search needs 1 or more", s.NumBottlenecks))
			}
			return out
		},
		New: func(s Settings, _ Tuner) (Strategy, error) {
			return beam{n: max(1, s.NumTopKernels), m: max(1, s.NumBottlenecks), divergence: s.DivergencePct}, nil
		}})
	Register(Spec{Name: Tune, Searches: true,
		Summary: "search the kernel's launch and constexpr knobs; no LLM",
		New:     NewTune})
	Register(Spec{Name: Noop, Summary: "verify and time the input kernel; no search rounds"})
}

// NewTune builds the tune strategy (also the polish after an LLM search).
func NewTune(s Settings, tuner Tuner) (Strategy, error) {
	if tuner == nil {
		return nil, fmt.Errorf("%s: %w", Tune, ErrNoTuner)
	}
	return tuneStrategy{tuner: tuner, max: max(1, s.MaxVariants)}, nil
}

// greedy rewrites the best kernel once a round.
type greedy struct{}

func (greedy) Name() string    { return Greedy }
func (greedy) Directions() int { return 1 }

func (greedy) Slots(_ context.Context, s *State, _ History) ([]Slot, error) {
	return []Slot{{Index: 1, Parents: []string{s.BestID}, Rank: 1}}, nil
}

func (greedy) Update(s *State, out Outcome, _ History) { Plateau(s, out) }

// beam keeps the n fastest distinct kernels and explores m distinct
// directions from each.
type beam struct {
	n, m       int
	divergence float64 // percent
}

func (beam) Name() string      { return Beam }
func (b beam) Directions() int { return b.m }

// Slots gives each beam member m directions. Slots of members the beam
// lacks (fewer than n distinct kernels qualify) go to the best, as further
// directions of its one diagnosis: the branch "continues from the best".
func (b beam) Slots(_ context.Context, s *State, _ History) ([]Slot, error) {
	members := BeamMembers(s)
	var out []Slot
	idx := 0
	for i, p := range members {
		count := b.m
		if i == 0 {
			count += (b.n - len(members)) * b.m
		}
		for rank := 1; rank <= count; rank++ {
			idx++
			out = append(out, Slot{Index: idx, Parents: []string{p}, Rank: rank})
		}
	}
	return out, nil
}

// BeamMembers is the beam with the best first and no repeats.
func BeamMembers(s *State) []string {
	out := []string{s.BestID}
	for _, id := range s.Beam {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Update rebuilds the beam from its members and the round's measured
// candidates: one kernel per normalised-source hash, none slower than the
// best by more than the divergence threshold, the best first, then by time.
func (b beam) Update(s *State, out Outcome, h History) {
	Plateau(s, out)
	pool := map[string]store.Candidate{}
	for _, id := range BeamMembers(s) {
		if c, ok := h.ByID[id]; ok {
			pool[id] = c
		}
	}
	for _, c := range out.Measured {
		pool[c.ID] = c
	}
	best, ok := pool[s.BestID]
	if !ok {
		s.Beam = []string{s.BestID}
		return
	}
	var rest []store.Candidate
	for id, c := range pool {
		if id == s.BestID || c.MedianMS() <= 0 {
			continue
		}
		if SlowerPct(c.MedianMS(), best.MedianMS()) > b.divergence {
			continue // diverged: the branch is dropped
		}
		rest = append(rest, c)
	}
	slices.SortFunc(rest, func(x, y store.Candidate) int {
		switch {
		case x.MedianMS() < y.MedianMS():
			return -1
		case x.MedianMS() > y.MedianMS():
			return 1
		}
		return store.CompareIDs(x.ID, y.ID)
	})
	members := []string{best.ID}
	seen := map[string]bool{best.SourceHash: true}
	for _, c := range rest {
		if len(members) >= b.n {
			break
		}
		if seen[c.SourceHash] {
			continue
		}
		seen[c.SourceHash] = true
		members = append(members, c.ID)
	}
	s.Beam = members
}

// SlowerPct is how much slower t is than best, in percent (negative: faster).
func SlowerPct(t, best float64) float64 {
	if best <= 0 {
		return 0
	}
	return (t - best) / best * 100
}

// tuneStrategy evaluates knob variants of the best kernel; no LLM.
type tuneStrategy struct {
	tuner Tuner
	max   int
}

func (tuneStrategy) Name() string    { return Tune }
func (tuneStrategy) Directions() int { return 0 }

// Slots asks the tuner for more variants the longer the best stands still,
// and keeps the first max that the run has not evaluated yet. The variants
// are of the walk kernel when there is one (see State.Walk), else of the
// best.
func (t tuneStrategy) Slots(ctx context.Context, s *State, h History) ([]Slot, error) {
	best, ok := h.ByID[s.BestID]
	if !ok {
		return nil, fmt.Errorf("tune: best kernel %s is not recorded", s.BestID)
	}
	base := best
	if w, ok := h.ByID[s.Walk]; ok {
		base = w
	}
	want := t.max * (s.NoImprovement + 1)
	vs, err := t.tuner.Variants(ctx, base.Source, want)
	if err != nil {
		return nil, fmt.Errorf("tune %s: %w", base.ID, err)
	}
	return untried(vs, h, base.ID, t.max), nil
}

// untried makes a slot of each variant of parent whose source the run has
// not evaluated yet (nor an earlier variant of the list), up to max (0: no
// limit), in the tuner's order.
func untried(vs []Variant, h History, parent string, max int) []Slot {
	var out []Slot
	seen := map[string]bool{}
	for _, v := range vs {
		hash := store.SourceHash(v.Source)
		if _, known := h.Hashes[hash]; known || seen[hash] {
			continue
		}
		seen[hash] = true
		out = append(out, Slot{Index: len(out) + 1, Parents: []string{parent}, Variant: &v})
		if len(out) == max {
			break
		}
	}
	return out
}

// Update counts the plateau and chooses the next round's walk kernel: none
// after a promotion (the new best is the base), else the round's fastest
// variant timed in full that beat the best's time without being promoted.
func (tuneStrategy) Update(s *State, out Outcome, h History) {
	Plateau(s, out)
	s.Walk = ""
	if out.Promoted {
		return
	}
	best, ok := h.ByID[s.BestID]
	if !ok || best.MedianMS() <= 0 {
		return
	}
	fastest := best.MedianMS()
	for _, c := range out.Measured {
		if c.Timing == nil || c.Timing.Screening() || c.MedianMS() <= 0 {
			continue
		}
		if ms := c.MedianMS(); ms < fastest {
			s.Walk, fastest = c.ID, ms
		}
	}
}

// Interface guards
var (
	_ Strategy = greedy{}
	_ Strategy = beam{}
	_ Strategy = tuneStrategy{}
)
