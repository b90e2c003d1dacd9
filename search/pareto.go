package search

// Pareto returns the indices, in order, of the points no other point
// dominates: a point is dominated by one that is nowhere more than tiePct
// slower and somewhere more than tiePct faster. Each point is a time per
// shape (the timed shape first, then the held-out ones); points of
// different lengths are never compared, and a point with a time of zero or
// less is left out. tiePct is the timer's resolution: points within it of
// one another are not ranked, so both stay.
func Pareto(points [][]float64, tiePct float64) []int {
	var out []int
	for i, p := range points {
		if !positive(p) {
			continue
		}
		dominated := false
		for j, q := range points {
			if j != i && len(q) == len(p) && positive(q) && dominates(q, p, tiePct/100) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
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
