package sweep

import (
	"math"
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

func TestFastP(t *testing.T) {
	mixed := []Outcome{
		{Correct: true, Speedup: 0.4},
		{Correct: true, Speedup: 1.0},
		{Correct: true, Speedup: 1.6},
		{Correct: true, Speedup: 3},
		{Correct: false, Speedup: 5}, // fast but wrong
		{Correct: true, Speedup: 0},  // correct, no baseline
		{},                           // no result
		{Correct: true, Speedup: 0.8},
	}
	for _, tc := range []struct {
		name string
		outs []Outcome
		p    float64
		want float64
	}{
		{"p=0 is the correctness rate of timed problems", mixed, 0, 5.0 / 8},
		{"p=0.5", mixed, 0.5, 4.0 / 8},
		{"p=0.8 is strict", mixed, 0.8, 3.0 / 8},
		{"p=1 is strict", mixed, 1, 2.0 / 8},
		{"p=1.5", mixed, 1.5, 2.0 / 8},
		{"p=2", mixed, 2, 1.0 / 8},
		{"no problems", nil, 0, 0},
		{"no correct problems", []Outcome{{Speedup: 2}, {Speedup: 3}, {}}, 0, 0},
		{"all fast", []Outcome{{true, 2.5}, {true, 2.1}}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FastP(tc.outs, tc.p); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("FastP(p=%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestGeoMean(t *testing.T) {
	for _, tc := range []struct {
		name  string
		outs  []Outcome
		want  float64
		wantN int
	}{
		{"two", []Outcome{{true, 2}, {true, 8}}, 4, 2},
		{"wrong ones do not count", []Outcome{{true, 2}, {false, 100}, {true, 0.5}}, 1, 2},
		{"no baseline does not count", []Outcome{{true, 3}, {true, 0}}, 3, 1},
		{"no correct problems", []Outcome{{false, 2}, {}}, 0, 0},
		{"none", nil, 0, 0},
		{"infinite speedups are ignored", []Outcome{{true, math.Inf(1)}, {true, 9}}, 9, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := GeoMean(tc.outs)
			if math.Abs(got-tc.want) > 1e-9 || n != tc.wantN {
				t.Errorf("GeoMean = %v over %d, want %v over %d", got, n, tc.want, tc.wantN)
			}
		})
	}
}

func TestTimingOf(t *testing.T) {
	if TimingOf(nil) != nil || TimingOf(&platform.Timing{Unavailable: "no torch.compile"}) != nil {
		t.Fatal("a missing or unavailable timing must give nil")
	}
	got := TimingOf(&platform.Timing{MedianMS: 0.14, MeanMS: 0.15, CV: 0.2, N: 500, HostMS: 0.13, Representative: true,
		TimesMS: []float64{0.2, 0.1, 0.14}})
	want := Timing{MedianMS: 0.14, MeanMS: 0.15, StdMS: 0.2 * 0.15, MinMS: 0.1, MaxMS: 0.2, N: 500, HostBound: true}
	if *got != want {
		t.Errorf("TimingOf: %+v, want %+v", *got, want)
	}
	// On the CPU the host is the clock: never host-bound.
	if TimingOf(&platform.Timing{MedianMS: 1, HostMS: 1, N: 5}).HostBound {
		t.Error("a CPU timing marked host-bound")
	}
}
