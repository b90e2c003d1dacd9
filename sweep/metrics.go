package sweep

import "math"

// Ps are the thresholds fast_p is reported at (KernelBench's).
var Ps = []float64{0, 0.5, 0.8, 1, 1.5, 2}

// Outcome is what fast_p needs of one problem: whether its kernel is
// correct and its speedup over a baseline (0: no speedup known, e.g. the
// baseline could not be timed).
type Outcome struct {
	Correct bool
	Speedup float64
}

// FastP is KernelBench's fast_p: the fraction of problems that are correct
// and faster than the baseline by more than p (speedup > p). n counts every
// problem, so a problem without a result or without a known speedup counts
// as not fast. No problems gives 0.
func FastP(outcomes []Outcome, p float64) float64 {
	if len(outcomes) == 0 {
		return 0
	}
	return float64(fastCount(outcomes, p)) / float64(len(outcomes))
}

// fastCount counts the problems that are correct with speedup > p.
func fastCount(outcomes []Outcome, p float64) int {
	k := 0
	for _, o := range outcomes {
		if o.Correct && o.Speedup > 0 && o.Speedup > p {
			k++
		}
	}
	return k
}

// GeoMean is the geometric mean of the speedups of the correct problems with
// a known speedup, and how many there were; (0, 0) when there are none.
func GeoMean(outcomes []Outcome) (float64, int) {
	sum, n := 0.0, 0
	for _, o := range outcomes {
		if !o.Correct || !(o.Speedup > 0) || math.IsInf(o.Speedup, 0) {
			continue
		}
		sum += math.Log(o.Speedup)
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return math.Exp(sum / float64(n)), n
}
