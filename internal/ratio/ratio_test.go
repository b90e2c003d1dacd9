package ratio

import (
	"math"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{1.4567, "1.46"}, {1, "1.00"}, {0.8, "0.80"}, {0.1, "0.10"}, {0.0996, "0.10"},
		{0.0994, "0.099"}, {0.043, "0.043"}, {0.00123, "0.0012"}, {0.0001, "0.00010"},
		{0.00004, "4.0e-05"}, {1234.5, "1234.50"},
		{0, "n/a"}, {-1, "n/a"}, {math.NaN(), "n/a"}, {math.Inf(1), "n/a"},
	} {
		if got := String(tc.x); got != tc.want {
			t.Errorf("String(%v) = %q, want %q", tc.x, got, tc.want)
		}
	}
}

func TestOf(t *testing.T) {
	for _, tc := range []struct{ a, b, want float64 }{
		{4, 2, 2}, {1, 4, 0.25}, {0, 2, 0}, {2, 0, 0}, {-1, 2, 0}, {math.NaN(), 1, 0}, {math.Inf(1), 1, 0}, {1, math.Inf(1), 0},
	} {
		if got := Of(tc.a, tc.b); got != tc.want {
			t.Errorf("Of(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
