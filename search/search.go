package search

import (
	"context"

	"github.com/kagent-kernels/kagent/agent/store"
)

// Phases of a run's search.
const (
	PhaseSearch = "search" // the configured strategy
	PhasePolish = "polish" // tune rounds on the best after an LLM search
)

// State is what the strategies carry from round to round. It is stored with
// every finished round (store.FinishRound), so a resumed run selects exactly
// what the killed one would have; its JSON form is part of the store's format.
type State struct {
	// BestID is the current best kernel (promoted, or the input).
	BestID string `json:"best_id"`
	// Beam holds the beam's distinct parents, best first (beam_search).
	Beam []string `json:"beam,omitempty"`
	// Archive maps a behaviour cell (Descriptor) to its elite (elites).
	Archive map[string]string `json:"archive,omitempty"`
	// NoImprovement counts consecutive rounds without a promotion.
	NoImprovement int `json:"no_improvement"`
	// Phase is PhaseSearch or PhasePolish.
	Phase string `json:"phase"`
	// PolishRounds counts the polish rounds run.
	PolishRounds int `json:"polish_rounds,omitempty"`
	// Rounds counts the search rounds run (round 0 excluded).
	Rounds int `json:"rounds"`
	// SearchStop is why the search phase ended, once a polish follows it.
	SearchStop string `json:"search_stop,omitempty"`
	// Halving is the halving strategy's bracket.
	Halving *Bracket `json:"halving,omitempty"`
	// Walk is the kernel tune explores from instead of the best: a round
	// that promoted nothing but timed, in full, a correct variant faster
	// than the best (by less than the promotion threshold) continues from
	// that variant, so gains below the threshold add up across rounds.
	Walk string `json:"walk,omitempty"`
	// Autotune is the autotune strategy's last walk and every screen of the
	// run.
	Autotune *AutotuneLog `json:"autotune,omitempty"`
}

// Slot is one unit of a round: it becomes a candidate and its refinements.
type Slot struct {
	// Index numbers the slot within its round from 1; it names the
	// candidate (r<round>c<index>).
	Index int
	// Parents are the kernels the slot starts from: the first is rewritten
	// or tuned, any others are shown with it (kernels strong elsewhere).
	Parents []string
	// Rank is the 1-based rank of the bottleneck direction in the first
	// parent's diagnosis (LLM strategies); 0 for a knob variant.
	Rank int
	// Variant is the knob variant to evaluate (tune), nil for LLM slots.
	Variant *Variant
	// Retime names a candidate of an earlier round that the slot times
	// again (a later rung of halving): no new candidate is made, the new
	// timing replaces the stored one and the candidate may be promoted in
	// this round.
	Retime string
	// Budget is the share of the configured timing (benchmark_warmup and
	// benchmark_repeat) the slot's candidate is timed with: 0 or 1 is the
	// full timing, the only one a candidate can be promoted on; below 1 a
	// screening timing, labelled as such in the store.
	Budget float64
}

// Screening reports whether the slot times with less than the full budget.
func (s Slot) Screening() bool { return s.Budget > 0 && s.Budget < 1 }

// Parent is the kernel the slot rewrites or tunes ("" for none).
func (s Slot) Parent() string {
	if len(s.Parents) == 0 {
		return ""
	}
	return s.Parents[0]
}

// History is a snapshot of a run's candidates of earlier rounds.
type History struct {
	// ByID holds the candidates by id.
	ByID map[string]store.Candidate
	// Hashes maps a normalised source hash to the first candidate with it.
	Hashes map[string]string
}

// NewHistory is the history of the candidates of rounds before beforeRound.
func NewHistory(cs []store.Candidate, beforeRound int) History {
	h := History{ByID: map[string]store.Candidate{}, Hashes: map[string]string{}}
	for _, c := range cs {
		if c.Round >= beforeRound {
			continue
		}
		h.ByID[c.ID] = c
		if _, ok := h.Hashes[c.SourceHash]; !ok {
			h.Hashes[c.SourceHash] = c.ID
		}
	}
	return h
}

// Outcome is what a finished round tells the strategy.
type Outcome struct {
	Promoted bool
	// Measured are the round's candidates that were timed and not rejected.
	Measured []store.Candidate
}

// Strategy chooses the slots of each round and learns from its outcome.
type Strategy interface {
	// Name is the strategy's registered name.
	Name() string
	// Directions is how many bottleneck directions a diagnosis asks for per
	// parent (0: the strategy needs no LLM).
	Directions() int
	// Slots are the round's slots; none means the strategy has nothing
	// left to propose.
	Slots(ctx context.Context, s *State, h History) ([]Slot, error)
	// Update records the round's outcome in s.
	Update(s *State, out Outcome, h History)
}

// Plateau counts the rounds without a promotion (the stop rule's input).
func Plateau(s *State, out Outcome) {
	if out.Promoted {
		s.NoImprovement = 0
	} else {
		s.NoImprovement++
	}
}
