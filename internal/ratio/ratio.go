// Package ratio writes speedups (time ratios) the one way every report,
// table and message of kagent shows them.
package ratio

import (
	"math"
	"strconv"
)

// String writes a speedup with two decimals ("1.46", "0.80") and, below
// 0.1, with two significant digits ("0.043", "0.0012"), so that a kernel
// many times slower than its baseline does not read "0.00". It is "n/a"
// for a ratio that is not a positive finite number (nothing measured).
func String(x float64) string {
	switch {
	case !(x > 0) || math.IsInf(x, 0):
		return "n/a"
	case x >= 0.0995:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case x >= 1e-4:
		// two significant digits: 0.043 has 3 decimals, 0.0012 has 4
		decimals := 1 - int(math.Floor(math.Log10(x)))
		return strconv.FormatFloat(x, 'f', decimals, 64)
	default:
		return strconv.FormatFloat(x, 'e', 1, 64)
	}
}

// Of is a/b, the speedup of time b over time a, or 0 ("not measured") when
// either is not a positive finite number.
func Of(a, b float64) float64 {
	if !(a > 0) || !(b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 0
	}
	return a / b
}
