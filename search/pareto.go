package search

import (
	"cmp"
	"slices"
)

// Pareto returns the indices, in order, of the Pareto set: the points
// taken in order of their time at the timed shape (the first), each kept
// unless a point kept before it dominates it. A point is dominated by one
// that is nowhere more than tiePct slower and somewhere more than tiePct
// faster. Each point is a time per shape (the timed shape first, then the
// held-out ones); points of different lengths are never compared, and a
// point with a time of zero or less is left out. tiePct is the timer's
// resolution: points within it of one another are not ranked, so both stay.
// With a tie, dominance is not transitive (p dominates q and q dominates r
// while p does not dominate r); judging each point only by the points kept
// before it keeps the fastest at the timed shape always, and keeps r there,
// where judging by every point would drop both q and r.
func Pareto(points [][]float64, tiePct float64) []int {
	order := make([]int, 0, len(points))
	for i, p := range points {
		if positive(p) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(points[a][0], points[b][0]) })
	var out []int
	for _, i := range order {
		dominated := false
		for _, j := range out {
			if len(points[j]) == len(points[i]) && dominates(points[j], points[i], tiePct/100) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// dominates reports whether a is nowhere slower than b beyond tie and
// somewhere faster beyond it.
func dominates(a, b []float64, tie float64) bool {
	better := false
	for k := range a {
		if a[k] > b[k]*(1+tie) {
			return false
		}
		if a[k] < b[k]*(1-tie) {
			better = true
		}
	}
	return better
}

func positive(p []float64) bool {
	if len(p) == 0 {
		return false
	}
	for _, v := range p {
		if !(v > 0) {
			return false
		}
	}
	return true
}
