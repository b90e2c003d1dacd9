package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kagent-kernels/kagent/agent/store"
)

// Autotune screens the knob space of the best kernel, walks to the fastest
// screened variant while it beats the kernel it came from, then verifies
// and times the fastest few in full.
const Autotune = "autotune"

// Autotune's defaults and bounds.
const (
	// DefaultFinalists is strategy_config.finalists when unset.
	DefaultFinalists = 3
	// MaxWalk bounds the screens of one walk.
	MaxWalk = 8
	// WalkGainPct: a screened variant moves the walk only when its screen
	// time beats the current kernel's by more than this. It is also the
	// screen's resolution: two screens within it are a tie.
	WalkGainPct = 1.0
	// FinalistMarginPct: a finalist after the first must screen within this
	// of the fastest. On the H200 a screen and the full timing of the same
	// kernel agreed within 0.6% (docs/results/2026-12-03-autotune), so a
	// variant screened 3% slower is all but certain to time slower in full.
	FinalistMarginPct = 3.0
)

func init() {
	Register(Spec{Name: Autotune, Searches: true,
		Summary: "screen the knob space in one worker call, walk to the fastest variant, verify and time the fastest few in full; no LLM",
		Check: func(s Settings) []string {
			if s.Finalists < 0 {
				return []string{fmt.Sprintf("strategy_config.finalists is %d: set 1 or more (0 for the default, %d)", s.Finalists, DefaultFinalists)}
			}
			return nil
		},
		New: NewAutotune})
}

// Screener screens variants: each is checked briefly (one call compared
// with the reference) and timed with a few calls, many per worker call.
// A screen is a ranking, never a candidate's time.
type Screener interface {
	Screen(ctx context.Context, vs []Variant) ([]Screen, error)
}

// Screen is one variant's screening: Passed with its MedianMS, or the
// failure that dropped it.
type Screen struct {
	Passed   bool
	MedianMS float64
	Failure  string
}

// AutotuneLog is the autotune strategy's state: the last walk and the screen
// times of every variant the run screened, stored with each round.
type AutotuneLog struct {
	// Root is the best kernel the last walk started from.
	Root string `json:"root"`
	// RootMS is the root's own screen time.
	RootMS float64 `json:"root_ms"`
	// Steps are the walk's screens.
	Steps []WalkStep `json:"steps"`
	// Finalists are the variants the walk handed to full verification and
	// timing, fastest screen first.
	Finalists []string `json:"finalists,omitempty"`
	// Next are the screened variants ranked after or tied with the
	// finalists that also beat the root's screen (at most twice `finalists`),
	// fastest first: a round whose finalists all fail verification takes the
	// next ones.
	Next []Variant `json:"next,omitempty"`
	// Retry is set when the last round's finalists all failed verification
	// and Next holds more.
	Retry bool `json:"retry,omitempty"`
	// Screened maps the source hash of every variant screened in the run to
	// its screen time (-1: it failed the screen).
	Screened map[string]float64 `json:"screened,omitempty"`
}

// WalkStep is one screen of a walk.
type WalkStep struct {
	// From labels the kernel whose space was screened ("" for the root).
	From     string `json:"from"`
	Screened int    `json:"screened"`
	Passed   int    `json:"passed"`
	// Fastest is the fastest variant screened so far and its time.
	Fastest   string  `json:"fastest,omitempty"`
	FastestMS float64 `json:"fastest_ms,omitempty"`
	// Moved is set when the walk continued from Fastest.
	Moved bool `json:"moved"`
}

// NewAutotune builds the autotune strategy; the tuner must enumerate spaces
// and screen (a Spacer and a Screener: the loop's tuner on a platform that
// screens).
func NewAutotune(s Settings, tuner Tuner) (Strategy, error) {
	sp, ok := tuner.(Spacer)
	sc, ok2 := tuner.(Screener)
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s: %w that enumerates a space and screens variants (a platform with warm workers)", Autotune, ErrNoTuner)
	}
	return autotune{space: sp, screen: sc, max: max(1, s.MaxVariants), finalists: cmp.Or(s.Finalists, DefaultFinalists)}, nil
}

type autotune struct {
	space     Spacer
	screen    Screener
	max       int
	finalists int
}

func (autotune) Name() string    { return Autotune }
func (autotune) Directions() int { return 0 }

// point is a screened variant of the walk.
type point struct {
	label, source string
	ms            float64
}

// Slots walks from the best kernel (unless the last walk started there) and
// returns its finalists: up to `finalists` of the fastest screened variants
// faster than the best's own screen, each a slot verified and timed in full
// (see finalist for which join).
func (a autotune) Slots(ctx context.Context, s *State, h History) ([]Slot, error) {
	if s.Autotune != nil && s.Autotune.Root == s.BestID {
		// The best's space has been walked: only the next-ranked variants
		// after finalists that all failed verification.
		log := s.Autotune
		if !log.Retry || len(log.Next) == 0 {
			return nil, nil
		}
		n := min(a.finalists, len(log.Next))
		out := make([]Slot, n)
		log.Finalists = nil
		for i, v := range log.Next[:n] {
			out[i] = Slot{Index: i + 1, Parents: []string{s.BestID}, Variant: &v}
			log.Finalists = append(log.Finalists, v.Label)
		}
		log.Next, log.Retry = log.Next[n:], false
		return out, nil
	}
	best, ok := h.ByID[s.BestID]
	if !ok {
		return nil, fmt.Errorf("autotune: best kernel %s is not recorded", s.BestID)
	}
	log := &AutotuneLog{Root: best.ID, Screened: map[string]float64{}}
	if s.Autotune != nil {
		for k, v := range s.Autotune.Screened {
			log.Screened[k] = v
		}
	}
	rootHash := store.SourceHash(best.Source)
	rootMS, rootKnown := log.Screened[rootHash]
	cur := point{source: best.Source, ms: math.Inf(1)}
	if rootKnown && rootMS > 0 {
		cur.ms = rootMS
	}
	var pool []point
	for step := 0; step < MaxWalk; step++ {
		vs, err := a.space.Space(ctx, cur.source, a.max)
		if err != nil {
			return nil, fmt.Errorf("autotune %s: %w", best.ID, err)
		}
		var batch []point
		seen := map[string]bool{}
		if step == 0 && !rootKnown {
			batch = append(batch, point{label: "", source: best.Source})
			seen[rootHash] = true
		}
		for _, v := range vs {
			hash := store.SourceHash(v.Source)
			_, screened := log.Screened[hash]
			_, tried := h.Hashes[hash]
			if screened || tried || seen[hash] {
				continue
			}
			seen[hash] = true
			batch = append(batch, point{label: MergeLabels(cur.label, v.Label), source: v.Source})
		}
		if len(batch) == 0 {
			break
		}
		in := make([]Variant, len(batch))
		for i, p := range batch {
			in[i] = Variant{Label: cmp.Or(p.label, "the best kernel"), Source: p.source}
		}
		res, err := a.screen.Screen(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("autotune %s: screen: %w", best.ID, err)
		}
		if len(res) != len(batch) {
			return nil, fmt.Errorf("autotune %s: %d screens for %d variants", best.ID, len(res), len(batch))
		}
		st := WalkStep{From: cur.label, Screened: len(batch)}
		for i, r := range res {
			p := batch[i]
			ms := -1.0
			if r.Passed && r.MedianMS > 0 {
				ms = r.MedianMS
				st.Passed++
			}
			log.Screened[store.SourceHash(p.source)] = ms
			switch {
			case p.source == best.Source:
				if ms > 0 {
					cur.ms, rootMS = ms, ms
				}
			case ms > 0:
				pool = append(pool, point{label: p.label, source: p.source, ms: ms})
			}
		}
		slices.SortStableFunc(pool, func(x, y point) int { return cmp.Compare(x.ms, y.ms) })
		if len(pool) > 0 {
			st.Fastest, st.FastestMS = pool[0].label, pool[0].ms
		}
		st.Moved = len(pool) > 0 && pool[0].source != cur.source && pool[0].ms < cur.ms*(1-WalkGainPct/100)
		log.Steps = append(log.Steps, st)
		if !st.Moved {
			break
		}
		cur = pool[0]
	}
	log.RootMS = max(rootMS, 0)
	var out []Slot
	var picked []float64
	for _, p := range pool {
		if rootMS > 0 && p.ms >= rootMS || len(log.Next) == 2*a.finalists {
			break
		}
		v := Variant{Label: p.label, Source: p.source}
		if len(out) == a.finalists || !finalist(p.ms, picked) {
			log.Next = append(log.Next, v)
			continue
		}
		picked = append(picked, p.ms)
		out = append(out, Slot{Index: len(out) + 1, Parents: []string{best.ID}, Variant: &v})
		log.Finalists = append(log.Finalists, p.label)
	}
	s.Autotune = log
	return out, nil
}

// finalist reports whether a variant screened at ms joins the finalists
// picked so far (their screen times, fastest first): the first always; a
// later one only within FinalistMarginPct of the fastest and not tied
// (within WalkGainPct) with any picked. A tied or slower variant could add
// at most the screen's resolution, not what a full evaluation costs; it
// waits in Next in case every finalist fails verification.
func finalist(ms float64, picked []float64) bool {
	if len(picked) == 0 {
		return true
	}
	if ms > picked[0]*(1+FinalistMarginPct/100) {
		return false
	}
	for _, p := range picked {
		if math.Abs(ms-p) <= p*WalkGainPct/100 {
			return false
		}
	}
	return true
}

// Update counts the plateau, except for a round whose finalists all failed
// verification while more screened variants wait: the next round takes
// those.
func (autotune) Update(s *State, out Outcome, _ History) {
	if log := s.Autotune; log != nil && !out.Promoted && len(out.Measured) == 0 && len(log.Next) > 0 {
		log.Retry = true
		return
	}
	if s.Autotune != nil {
		s.Autotune.Retry = false
	}
	Plateau(s, out)
}

// MergeLabels is the label of variant b of a kernel that is itself variant
// a: the knob values of a, overridden by b's ("BLOCK=1024 num_warps=4" and
// "num_warps=8" give "BLOCK=1024 num_warps=8"). Labels that are not lists
// of ID=value are joined with "; ".
func MergeLabels(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	ta, tb := strings.Fields(a), strings.Fields(b)
	for _, t := range append(slices.Clone(ta), tb...) {
		if !strings.Contains(t, "=") {
			return a + "; " + b
		}
	}
	out := slices.Clone(ta)
	for _, t := range tb {
		k := t[:strings.Index(t, "=")+1]
		if i := slices.IndexFunc(out, func(x string) bool { return strings.HasPrefix(x, k) }); i >= 0 {
			out[i] = t
		} else {
			out = append(out, t)
		}
	}
	return strings.Join(out, " ")
}

// Interface guards
var _ Strategy = autotune{}
