package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/kagent-dev/kagent/agent/store"
	"github.com/kagent-dev/kagent/configs"
)

// Search phases.
const (
	phaseSearch = "search" // the configured strategy
	phasePolish = "polish" // tune rounds on the best after an LLM search
)

// searchState is what the strategies carry from round to round. It is
// stored with every finished round (store.FinishRound), so a resumed run
// selects exactly what the killed one would have.
type searchState struct {
	// BestID is the current best kernel (promoted, or the input).
	BestID string `json:"best_id"`
	// Beam holds the beam's distinct parents, best first (beam_search).
	Beam []string `json:"beam,omitempty"`
	// NoImprovement counts consecutive rounds without a promotion.
	NoImprovement int `json:"no_improvement"`
	// Phase is phaseSearch or phasePolish.
	Phase string `json:"phase"`
	// PolishRounds counts the polish rounds run.
	PolishRounds int `json:"polish_rounds,omitempty"`
	// Rounds counts the search rounds run (round 0 excluded).
	Rounds int `json:"rounds"`
	// SearchStop is why the search phase ended, once a polish follows it.
	SearchStop string `json:"search_stop,omitempty"`
}

// slot is one (parent, direction) pair of a round: the unit that becomes a
// candidate and its refinements.
type slot struct {
	// Index numbers the slot within its round from 1; it names the
	// candidate (r<round>c<index>).
	Index    int
	ParentID string
	// Rank is the 1-based rank of the bottleneck direction in the parent's
	// diagnosis (LLM strategies); 0 for a knob variant.
	Rank int
	// Variant is the knob variant to evaluate (tune), nil for LLM slots.
	Variant *Variant
}

// history is a snapshot of a run's candidates of earlier rounds, by id.
type history struct {
	byID   map[string]store.Candidate
	hashes map[string]string // source hash -> first candidate id
}

func newHistory(cs []store.Candidate, beforeRound int) history {
	h := history{byID: map[string]store.Candidate{}, hashes: map[string]string{}}
	for _, c := range cs {
		if c.Round >= beforeRound {
			continue
		}
		h.byID[c.ID] = c
		if _, ok := h.hashes[c.SourceHash]; !ok {
			h.hashes[c.SourceHash] = c.ID
		}
	}
	return h
}

// roundOutcome is what a finished round tells the strategy.
type roundOutcome struct {
	Promoted bool
	// Measured are the round's candidates that were timed and not rejected.
	Measured []store.Candidate
}

// strategy chooses the slots of each round and learns from its outcome.
type strategy interface {
	name() string
	// directions is how many bottleneck directions a diagnosis asks for per
	// parent slot (0: the strategy needs no LLM).
	directions() int
	slots(ctx context.Context, s *searchState, h history) ([]slot, error)
	update(s *searchState, out roundOutcome, h history)
}

// newStrategy builds the strategy of a configuration. tuner may be nil for
// the LLM strategies.
func newStrategy(cfg configs.Config, tuner Tuner) (strategy, error) {
	switch cfg.Strategy {
	case configs.StrategyGreedy:
		return greedy{}, nil
	case configs.StrategyBeam:
		sc := cfg.StrategyConfig
		return beam{n: max(1, sc.NumTopKernels), m: max(1, sc.NumBottlenecks), divergence: cfg.DivergenceThreshold}, nil
	case configs.StrategyTune:
		if tuner == nil {
			return nil, fmt.Errorf("%w: the tune strategy needs a tuner", ErrNoProposer)
		}
		return tuneStrategy{tuner: tuner, max: max(1, cfg.StrategyConfig.MaxVariants)}, nil
	}
	return nil, fmt.Errorf("%w: unknown strategy %q", ErrInvalidInput, cfg.Strategy)
}

// greedy rewrites the best kernel once a round.
type greedy struct{}

func (greedy) name() string    { return configs.StrategyGreedy }
func (greedy) directions() int { return 1 }

func (greedy) slots(_ context.Context, s *searchState, _ history) ([]slot, error) {
	return []slot{{Index: 1, ParentID: s.BestID, Rank: 1}}, nil
}

func (greedy) update(s *searchState, out roundOutcome, _ history) { plateau(s, out) }

func plateau(s *searchState, out roundOutcome) {
	if out.Promoted {
		s.NoImprovement = 0
	} else {
		s.NoImprovement++
	}
}

// beam keeps the n fastest distinct kernels and explores m distinct
// directions from each.
type beam struct {
	n, m       int
	divergence float64 // percent
}

func (beam) name() string      { return configs.StrategyBeam }
func (b beam) directions() int { return b.m }

// slots gives each beam member m directions. Slots of members the beam
// lacks (fewer than n distinct kernels qualify) go to the best, as further
// directions of its one diagnosis: the branch "continues from the best".
func (b beam) slots(_ context.Context, s *searchState, _ history) ([]slot, error) {
	members := beamMembers(s)
	var out []slot
	idx := 0
	for i, p := range members {
		count := b.m
		if i == 0 {
			count += (b.n - len(members)) * b.m
		}
		for rank := 1; rank <= count; rank++ {
			idx++
			out = append(out, slot{Index: idx, ParentID: p, Rank: rank})
		}
	}
	return out, nil
}

// beamMembers is the beam with the best first and no repeats.
func beamMembers(s *searchState) []string {
	out := []string{s.BestID}
	for _, id := range s.Beam {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// update rebuilds the beam from its members and the round's measured
// candidates: one kernel per normalised-source hash, none slower than the
// best by more than the divergence threshold, the best first, then by time.
func (b beam) update(s *searchState, out roundOutcome, h history) {
	plateau(s, out)
	pool := map[string]store.Candidate{}
	for _, id := range beamMembers(s) {
		if c, ok := h.byID[id]; ok {
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
		if slowerPct(c.MedianMS(), best.MedianMS()) > b.divergence {
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
		return compareIDs(x.ID, y.ID)
	})
	beam := []string{best.ID}
	seen := map[string]bool{best.SourceHash: true}
	for _, c := range rest {
		if len(beam) >= b.n {
			break
		}
		if seen[c.SourceHash] {
			continue
		}
		seen[c.SourceHash] = true
		beam = append(beam, c.ID)
	}
	s.Beam = beam
}

// slowerPct is how much slower t is than best, in percent (negative: faster).
func slowerPct(t, best float64) float64 {
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

func (tuneStrategy) name() string    { return configs.StrategyTune }
func (tuneStrategy) directions() int { return 0 }

// slots asks the tuner for more variants the longer the best stands still,
// and keeps the first max that the run has not evaluated yet.
func (t tuneStrategy) slots(ctx context.Context, s *searchState, h history) ([]slot, error) {
	best, ok := h.byID[s.BestID]
	if !ok {
		return nil, fmt.Errorf("tune: best kernel %s is not recorded", s.BestID)
	}
	want := t.max * (s.NoImprovement + 1)
	vs, err := t.tuner.Variants(ctx, best.Source, want)
	if err != nil {
		return nil, fmt.Errorf("tune %s: %w", best.ID, err)
	}
	var out []slot
	seen := map[string]bool{}
	for _, v := range vs {
		hash := store.SourceHash(v.Source)
		if _, known := h.hashes[hash]; known || seen[hash] {
			continue
		}
		seen[hash] = true
		v := v
		out = append(out, slot{Index: len(out) + 1, ParentID: best.ID, Variant: &v})
		if len(out) == t.max {
			break
		}
	}
	return out, nil
}

func (tuneStrategy) update(s *searchState, out roundOutcome, _ history) { plateau(s, out) }

// Interface guards
var (
	_ strategy = greedy{}
	_ strategy = beam{}
	_ strategy = tuneStrategy{}
)
