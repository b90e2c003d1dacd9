package tune

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Search-space bounds.
const (
	MinBlock = 16
	MaxBlock = 8192
)

var (
	warpValues  = []int{1, 2, 4, 8, 16}
	stageValues = []int{1, 2, 3, 4, 5}
	groupValues = []int{1, 2, 4, 8, 16, 32}
	splitValues = []int{1, 2, 4, 8, 16}
)

// Change sets one knob to a new value.
type Change struct {
	Knob string `json:"knob"` // Knob.ID
	From int    `json:"from"`
	To   int    `json:"to"`
}

// Variant is an edited kernel source.
type Variant struct {
	// Label names the new values, in knob order: "BLOCK=2048 num_warps=8".
	Label   string   `json:"label"`
	Changes []Change `json:"changes"`
	Source  string   `json:"source"`
}

// Values is a knob's search space: the values it may take other than its
// current one, ascending. Blocks are powers of two in [MinBlock, MaxBlock]
// and not below Min.
func Values(k Knob) []int {
	var vals []int
	switch k.Kind {
	case KindBlock:
		for v := MinBlock; v <= MaxBlock; v *= 2 {
			vals = append(vals, v)
		}
	case KindWarps:
		vals = warpValues
	case KindStages:
		vals = stageValues
	case KindGroup:
		vals = groupValues
	case KindSplit:
		vals = splitValues
	}
	out := make([]int, 0, len(vals))
	for _, v := range vals {
		if v != k.Value && v >= k.Min {
			out = append(out, v)
		}
	}
	return out
}

// distance is how many steps v is from k's current value: doublings for
// power-of-two kinds, units for stages (1 = a neighbour).
func distance(k Knob, v int) int {
	if k.Kind == KindStages || k.Value <= 0 {
		return int(math.Abs(float64(v - k.Value)))
	}
	d := math.Abs(math.Log2(float64(v)) - math.Log2(float64(k.Value)))
	return int(math.Ceil(d - 1e-9))
}

// A move sets one knob to one value.
type move struct {
	knob  int // index into the knobs
	value int
	dist  int
	up    bool
}

// A plan is one or two moves with a score (lower is explored first).
type plan struct {
	moves []move
	score float64
}

// Scoring: each step away from the current value costs 1; changing two
// knobs costs 0.5 more than the steps; moving a block and num_warps of the
// same kernel the same way (bigger tile, more warps) is worth 0.25, and
// pairing knobs of different kernels costs 0.5; an implicit knob (Triton's
// default, never chosen by the author) costs 0.25 more.
const (
	pairCost        = 0.5
	coupledBonus    = 0.25
	crossKernelCost = 0.5
	implicitCost    = 0.25
	// pairMaxDist bounds the moves that are combined in pairs.
	pairMaxDist = 2
)

// Variants proposes up to max edited sources (max <= 0: all of them), most
// promising first: each knob alone one step from its current value, then
// two steps, then pairs of knobs one step each (a block with num_warps of
// the same kernel in the same direction first), and so on by a score that
// adds the steps. Every variant differs from source and from the others.
func Variants(source string, knobs []Knob, max int) ([]Variant, error) {
	if err := check(source, knobs); err != nil {
		return nil, fmt.Errorf("tune variants: %w", err)
	}
	ids := knobIDs(knobs)
	var singles []move
	for i, k := range knobs {
		for _, v := range Values(k) {
			singles = append(singles, move{knob: i, value: v, dist: distance(k, v), up: v > k.Value})
		}
	}
	plans := make([]plan, 0, len(singles)*4)
	for _, m := range singles {
		plans = append(plans, plan{moves: []move{m}, score: moveCost(knobs[m.knob], m)})
	}
	for a, ma := range singles {
		if ma.dist > pairMaxDist {
			continue
		}
		for _, mb := range singles[a+1:] {
			if mb.dist > pairMaxDist || mb.knob == ma.knob {
				continue
			}
			plans = append(plans, plan{moves: []move{ma, mb}, score: pairScore(knobs, ma, mb)})
		}
	}
	slices.SortStableFunc(plans, comparePlans)

	seen := map[string]bool{source: true}
	var out []Variant
	for _, p := range plans {
		if max > 0 && len(out) >= max {
			break
		}
		changes := make([]Change, len(p.moves))
		for i, m := range p.moves {
			changes[i] = Change{Knob: ids[m.knob], From: knobs[m.knob].Value, To: m.value}
		}
		src, err := apply(source, knobs, ids, changes)
		if err != nil {
			// Two knobs sharing a literal (a grid used by two launches):
			// this combination cannot be written; others can.
			continue
		}
		if seen[src] {
			continue
		}
		seen[src] = true
		out = append(out, Variant{Label: Label(changes), Changes: changes, Source: src})
	}
	return out, nil
}

func moveCost(k Knob, m move) float64 {
	c := float64(m.dist)
	if k.Site == SiteImplicit {
		c += implicitCost
	}
	return c
}

func pairScore(knobs []Knob, a, b move) float64 {
	ka, kb := knobs[a.knob], knobs[b.knob]
	s := moveCost(ka, a) + moveCost(kb, b) + pairCost
	sameKernel := ka.Kernel != "" && ka.Kernel == kb.Kernel
	if ka.Kernel != "" && kb.Kernel != "" && !sameKernel {
		s += crossKernelCost
	}
	coupled := (ka.Kind == KindBlock && kb.Kind == KindWarps) || (ka.Kind == KindWarps && kb.Kind == KindBlock)
	if coupled && a.up == b.up && (sameKernel || ka.Kernel == "" || kb.Kernel == "") {
		s -= coupledBonus
	}
	return s
}

// comparePlans orders by score, then fewer changes, then more upward moves
// (bigger tiles and more warps first), then knob order, then value.
func comparePlans(a, b plan) int {
	if a.score != b.score {
		if a.score < b.score {
			return -1
		}
		return 1
	}
	if len(a.moves) != len(b.moves) {
		return len(a.moves) - len(b.moves)
	}
	if ua, ub := ups(a), ups(b); ua != ub {
		return ub - ua
	}
	for i := range a.moves {
		if a.moves[i].knob != b.moves[i].knob {
			return a.moves[i].knob - b.moves[i].knob
		}
		if a.moves[i].value != b.moves[i].value {
			return a.moves[i].value - b.moves[i].value
		}
	}
	return 0
}

func ups(p plan) int {
	n := 0
	for _, m := range p.moves {
		if m.up {
			n++
		}
	}
	return n
}

// Label names changes as "ID=value ...".
func Label(changes []Change) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = c.Knob + "=" + strconv.Itoa(c.To)
	}
	return strings.Join(parts, " ")
}

// Apply writes changes into source at the knobs' spans. Knobs are named by
// ID (or by Name when they have no ID).
func Apply(source string, knobs []Knob, changes []Change) (string, error) {
	if err := check(source, knobs); err != nil {
		return "", fmt.Errorf("apply knobs: %w", err)
	}
	out, err := apply(source, knobs, knobIDs(knobs), changes)
	if err != nil {
		return "", fmt.Errorf("apply knobs: %w", err)
	}
	return out, nil
}

type edit struct {
	off, end int
	text     string
}

func apply(source string, knobs []Knob, ids []string, changes []Change) (string, error) {
	var edits []edit
	for _, c := range changes {
		i := slices.Index(ids, c.Knob)
		if i < 0 {
			return "", fmt.Errorf("%w: %q", ErrUnknownKnob, c.Knob)
		}
		k := knobs[i]
		val := strconv.Itoa(c.To)
		if k.Site == SiteImplicit {
			edits = append(edits, edit{k.Span.Offset, k.Span.Offset, k.Insert + val})
		} else {
			edits = append(edits, edit{k.Span.Offset, k.Span.End, val})
		}
		for _, s := range k.Linked {
			edits = append(edits, edit{s.Offset, s.End, val})
		}
	}
	// Stable: insertions at one point keep the order of the changes.
	slices.SortStableFunc(edits, func(a, b edit) int { return a.off - b.off })
	for i := 1; i < len(edits); i++ {
		p, e := edits[i-1], edits[i]
		if e.off < p.end || (e.off == p.off && e.end > e.off && p.end > p.off) {
			return "", fmt.Errorf("%w: edits overlap at byte %d", ErrSpan, edits[i].off)
		}
	}
	var b strings.Builder
	b.Grow(len(source) + 16*len(edits))
	last := 0
	for _, e := range edits {
		b.WriteString(source[last:e.off])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(source[last:])
	return b.String(), nil
}

// knobIDs returns each knob's ID, or its Name when the ID is unset.
func knobIDs(knobs []Knob) []string {
	ids := make([]string, len(knobs))
	for i, k := range knobs {
		ids[i] = k.ID
		if ids[i] == "" {
			ids[i] = k.Name
		}
	}
	return ids
}
