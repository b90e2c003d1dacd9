package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/kagent-kernels/kagent/agent/store"
)

// Halving is successive halving over the knob space of the best kernel.
const Halving = "halving"

// Halving's defaults and bounds.
const (
	// DefaultEta is the reduction factor when strategy_config.eta is unset.
	DefaultEta = 3
	// MinBudget is the smallest share of the full timing a rung uses; it
	// bounds the number of rungs (eta^-rungs >= MinBudget).
	MinBudget = 0.01
)

func init() {
	Register(Spec{Name: Halving, Searches: true,
		Summary: "time the whole knob space briefly, keep the fastest 1/eta, time them longer, until a full timing; no LLM",
		Check: func(s Settings) []string {
			if s.Eta != 0 && s.Eta < 2 {
				return []string{fmt.Sprintf("strategy_config.eta is %d: halving keeps 1/eta of each rung, so eta must be 2 or more", s.Eta)}
			}
			return nil
		},
		New: NewHalving})
}

// NewHalving builds the halving strategy; the tuner must enumerate spaces
// (a Spacer, such as KnobTuner).
func NewHalving(s Settings, tuner Tuner) (Strategy, error) {
	sp, ok := tuner.(Spacer)
	if !ok {
		return nil, fmt.Errorf("%s: %w that enumerates a space", Halving, ErrNoTuner)
	}
	return halving{space: sp, max: max(1, s.MaxVariants), eta: max(2, cmp.Or(s.Eta, DefaultEta))}, nil
}

// Bracket is one run of successive halving from one kernel: the state the
// halving strategy carries from round (rung) to round.
type Bracket struct {
	// Root is the kernel whose space the bracket searches.
	Root string `json:"root"`
	// Rungs is the bracket's number of rungs; the last times in full.
	Rungs int `json:"rungs"`
	// Rung is the rung the next round runs (Rungs: the bracket is done).
	Rung int `json:"rung"`
	// Alive are the candidates the next rung times again, fastest first.
	Alive []string `json:"alive,omitempty"`
	// Log is what each finished rung timed and kept.
	Log []RungLog `json:"log,omitempty"`
}

// RungLog is one finished rung of a bracket.
type RungLog struct {
	Rung   int     `json:"rung"`
	Budget float64 `json:"budget"`
	// Timed are the candidates the rung timed and did not reject, fastest
	// first; Kept the ones the next rung times again (all, at the last).
	Timed []string `json:"timed"`
	Kept  []string `json:"kept"`
}

// Done reports whether the bracket's last rung has run.
func (b *Bracket) Done() bool { return b.Rung >= b.Rungs }

// Rungs is the number of rungs that successive halving over n variants
// uses with reduction factor eta: enough that the last rung times about
// one variant in full, and no more than the budget floor allows.
func Rungs(n, eta int) int {
	if n <= 1 || eta < 2 {
		return 1
	}
	r := int(math.Ceil(math.Log(float64(n))/math.Log(float64(eta)) - 1e-9))
	limit := int(math.Floor(math.Log(1/MinBudget)/math.Log(float64(eta)) + 1e-9))
	return min(r, limit) + 1
}

// RungBudget is the share of the full timing rung k of rungs uses:
// eta^-(rungs-1-k), 1 at the last rung.
func RungBudget(k, rungs, eta int) float64 {
	return math.Pow(float64(eta), -float64(rungs-1-k))
}

// halving times the whole knob space of the best kernel with a short
// timing, keeps the fastest 1/eta, times them again with eta times the
// budget, and so on until a rung times the survivors in full; only those
// can be promoted. A bracket that promoted starts another from the new
// best; one that did not ends the search.
type halving struct {
	space Spacer
	max   int
	eta   int
}

func (halving) Name() string    { return Halving }
func (halving) Directions() int { return 0 }

// Slots opens a bracket (rung 0: every untried variant of the best's space,
// new candidates) or runs its next rung (the survivors timed again).
func (hv halving) Slots(ctx context.Context, s *State, h History) ([]Slot, error) {
	b := s.Halving
	if b != nil && !b.Done() {
		budget := RungBudget(b.Rung, b.Rungs, hv.eta)
		out := make([]Slot, len(b.Alive))
		for i, id := range b.Alive {
			out[i] = Slot{Index: i + 1, Parents: []string{id}, Retime: id, Budget: budget}
		}
		return out, nil
	}
	if b != nil && b.Root == s.BestID {
		return nil, nil // the best's space has been searched
	}
	best, ok := h.ByID[s.BestID]
	if !ok {
		return nil, fmt.Errorf("halving: best kernel %s is not recorded", s.BestID)
	}
	vs, err := hv.space.Space(ctx, best.Source, hv.max)
	if err != nil {
		return nil, fmt.Errorf("halving %s: %w", best.ID, err)
	}
	out := untried(vs, h, best.ID, 0)
	if len(out) == 0 {
		return nil, nil
	}
	rungs := Rungs(len(out), hv.eta)
	budget := RungBudget(0, rungs, hv.eta)
	for i := range out {
		out[i].Budget = budget
	}
	s.Halving = &Bracket{Root: best.ID, Rungs: rungs}
	return out, nil
}

// Update ranks what the rung timed (by its median, then id) and keeps the
// fastest 1/eta (rounded up) for the next rung. Only the last rung counts
// toward the plateau: a screening rung cannot promote.
func (hv halving) Update(s *State, out Outcome, h History) {
	b := s.Halving
	if b == nil || b.Done() {
		Plateau(s, out)
		return
	}
	var timed []store.Candidate
	if b.Rung == 0 {
		timed = slices.Clone(out.Measured)
	} else {
		for _, id := range b.Alive {
			if c, ok := h.ByID[id]; ok && c.Status.Measured() {
				timed = append(timed, c)
			}
		}
	}
	timed = slices.DeleteFunc(timed, func(c store.Candidate) bool { return c.MedianMS() <= 0 })
	slices.SortFunc(timed, func(x, y store.Candidate) int {
		return cmp.Or(cmp.Compare(x.MedianMS(), y.MedianMS()), store.CompareIDs(x.ID, y.ID))
	})
	ids := make([]string, len(timed))
	for i, c := range timed {
		ids[i] = c.ID
	}
	last := b.Rung == b.Rungs-1
	kept := ids
	if !last {
		kept = ids[:(len(ids)+hv.eta-1)/hv.eta]
	}
	b.Log = append(b.Log, RungLog{Rung: b.Rung, Budget: RungBudget(b.Rung, b.Rungs, hv.eta), Timed: ids, Kept: kept})
	b.Alive = kept
	b.Rung++
	if last || len(kept) == 0 {
		b.Rung = b.Rungs
		b.Alive = nil
		Plateau(s, out)
	}
}

// Interface guards
var _ Strategy = halving{}
