package search

import (
	"slices"
	"testing"
)

func TestPareto(t *testing.T) {
	cases := []struct {
		name   string
		points [][]float64
		tie    float64
		want   []int
	}{
		{"one shape: the fastest and its ties", [][]float64{{1.0}, {1.005}, {1.2}, {0.999}}, 1, []int{0, 1, 3}},
		{"one shape, no tie", [][]float64{{1.0}, {1.005}, {1.2}}, 0, []int{0}},
		{"a trade-off keeps both", [][]float64{{1.0, 2.0}, {1.1, 1.0}, {1.2, 2.5}}, 1, []int{0, 1}},
		{"slower everywhere is dominated", [][]float64{{1.0, 1.0, 1.0}, {1.02, 1.5, 1.0}}, 1, []int{0}},
		{"within the tie everywhere: both stay", [][]float64{{1.0, 1.0}, {1.009, 0.995}}, 1, []int{0, 1}},
		{"no time is left out", [][]float64{{1.0, 0}, {2.0, 2.0}, {-1, 1}, {}}, 1, []int{1}},
		{"lengths differ: not compared", [][]float64{{1.0}, {2.0, 1.0}}, 1, []int{0, 1}},
		{"a chain of ties keeps the fastest at the timed shape", [][]float64{{1.018, 0.5}, {1.009, 1.0}, {1.0, 2.0}}, 1, []int{0, 1, 2}},
		{"none", nil, 1, nil},
	}
	for _, c := range cases {
		if got := Pareto(c.points, c.tie); !slices.Equal(got, c.want) {
			t.Errorf("%s: Pareto(%v, %g) = %v, want %v", c.name, c.points, c.tie, got, c.want)
		}
	}
}
