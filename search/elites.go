package search

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kagent-kernels/kagent/agent/store"
)

// Elites is the MAP-Elites-like strategy's name.
const Elites = "elites"

func init() {
	Register(Spec{Name: Elites, NeedsLLM: true, Searches: true,
		Summary: "keep the fastest kernel of each behaviour cell (roofline class x block/warps regime); rewrite num_top_kernels cells' elites with num_inspirations others shown",
		Check: func(s Settings) []string {
			var out []string
			if s.NumTopKernels < 1 {
				out = append(out, fmt.Sprintf("strategy_config.num_top_kernels is %d: elites needs 1 or more cells a round", s.NumTopKernels))
			}
			if s.NumBottlenecks < 1 {
				out = append(out, fmt.Sprintf("strategy_config.num_bottlenecks is %d: elites needs 1 or more", s.NumBottlenecks))
			}
			if s.NumInspirations < 0 {
				out = append(out, fmt.Sprintf("strategy_config.num_inspirations is %d: elites needs 0 or more", s.NumInspirations))
			}
			return out
		},
		New: func(s Settings, _ Tuner) (Strategy, error) {
			return elites{n: max(1, s.NumTopKernels), m: max(1, s.NumBottlenecks), k: max(0, s.NumInspirations)}, nil
		}})
}

// elites keeps an archive of the fastest correct kernel per behaviour cell
// (Descriptor) in State.Archive. Each round it rewrites the elites of n
// distinct cells (the best's cell first, then the fastest other cells),
// each along m directions, and shows with each rewrite the k fastest elites
// of other cells (inspirations: the slot's further parents).
type elites struct {
	n, m, k int
}

func (elites) Name() string      { return Elites }
func (e elites) Directions() int { return e.m }

// Slots picks the parents from distinct cells. Cells the archive lacks
// (fewer than n) give their slots to the best as further directions.
func (e elites) Slots(_ context.Context, s *State, h History) ([]Slot, error) {
	ranked := rankElites(s, h)
	parents := []string{s.BestID}
	for _, el := range ranked {
		if len(parents) >= e.n {
			break
		}
		if el.id != s.BestID && el.cell != cellOf(s.BestID, h) {
			parents = append(parents, el.id)
		}
	}
	var out []Slot
	for i, p := range parents {
		count := e.m
		if i == 0 {
			count += (e.n - len(parents)) * e.m
		}
		insp := inspirations(p, cellOf(p, h), ranked, e.k)
		for rank := 1; rank <= count; rank++ {
			out = append(out, Slot{Index: len(out) + 1, Parents: append([]string{p}, insp...), Rank: rank})
		}
	}
	return out, nil
}

// inspirations are the k fastest elites of cells other than the parent's.
func inspirations(parent, cell string, ranked []elite, k int) []string {
	var out []string
	for _, el := range ranked {
		if len(out) >= k {
			break
		}
		if el.id != parent && el.cell != cell {
			out = append(out, el.id)
		}
	}
	return out
}

// Update places the round's measured (correct) candidates, the input and
// the best in the archive: a candidate takes its cell when the cell is empty or it is faster than the
// cell's elite (equal times keep the elite).
func (elites) Update(s *State, out Outcome, h History) {
	Plateau(s, out)
	if s.Archive == nil {
		s.Archive = map[string]string{}
	}
	// The input (round 0) and the best are candidates too: the first
	// Update seeds the archive with them.
	cs := slices.Clone(out.Measured)
	for _, c := range h.ByID {
		if c.ID == s.BestID || (c.Round == 0 && c.Status.Measured()) {
			cs = append(cs, c)
		}
	}
	slices.SortFunc(cs, func(x, y store.Candidate) int { return store.CompareIDs(x.ID, y.ID) })
	for _, c := range cs {
		if c.MedianMS() <= 0 {
			continue
		}
		cell := Descriptor(c)
		cur, ok := h.ByID[s.Archive[cell]]
		if !ok || c.MedianMS() < cur.MedianMS() {
			s.Archive[cell] = c.ID
		}
	}
}

// elite is one archive entry.
type elite struct {
	cell, id string
	ms       float64
}

// rankElites lists the archive's elites (and the best, in its cell when the
// archive has none there yet), fastest first, ties by candidate id.
func rankElites(s *State, h History) []elite {
	var out []elite
	seen := map[string]bool{}
	for cell, id := range s.Archive {
		if c, ok := h.ByID[id]; ok {
			out = append(out, elite{cell: cell, id: id, ms: c.MedianMS()})
			seen[cell] = true
		}
	}
	if b, ok := h.ByID[s.BestID]; ok && !seen[Descriptor(b)] {
		out = append(out, elite{cell: Descriptor(b), id: b.ID, ms: b.MedianMS()})
	}
	slices.SortFunc(out, func(x, y elite) int {
		switch {
		case x.ms < y.ms:
			return -1
		case x.ms > y.ms:
			return 1
		}
		return store.CompareIDs(x.id, y.id)
	})
	return out
}

func cellOf(id string, h History) string {
	c, ok := h.ByID[id]
	if !ok {
		return ""
	}
	return Descriptor(c)
}

// Descriptor is a kernel's behaviour cell: its roofline class (memory,
// compute or latency; "unplaced" when it could not be placed, as on the cpu
// platform) and its launch regime, the block size bucket (block<=128,
// block<=1024, block>1024, or block? when the source sets none as a
// literal) and the warps bucket (warps<=4, warps>4, or warps? when the
// source passes no num_warps literal), read from the largest literal given
// to a name with BLOCK in it and to num_warps.
func Descriptor(c store.Candidate) string {
	class := "unplaced"
	if c.Roofline != nil && c.Roofline.Placed() {
		class = string(c.Roofline.Class)
	}
	block := "block?"
	if b := largestLiteral(blockLiteral, c.Source); b > 0 {
		switch {
		case b <= 128:
			block = "block<=128"
		case b <= 1024:
			block = "block<=1024"
		default:
			block = "block>1024"
		}
	}
	warps := "warps?"
	if w := largestLiteral(warpsLiteral, c.Source); w > 0 {
		warps = "warps<=4"
		if w > 4 {
			warps = "warps>4"
		}
	}
	return class + "/" + block + "/" + warps
}

var (
	blockLiteral = regexp.MustCompile(`\b\w*BLOCK\w*\s*(?::\s*[\w.]+\s*)?=\s*(\d+)\b`)
	warpsLiteral = regexp.MustCompile(`\bnum_warps\s*=\s*(\d+)\b`)
)

// largestLiteral is the largest integer the pattern's group captures in
// the source outside comments (0: none).
func largestLiteral(re *regexp.Regexp, src string) int {
	best := 0
	for _, line := range strings.Split(src, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, m := range re.FindAllStringSubmatch(line, -1) {
			if v, err := strconv.Atoi(m[1]); err == nil && v > best {
				best = v
			}
		}
	}
	return best
}

// Interface guards
var _ Strategy = elites{}
