package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

// TestPrintEvalHostBound: a GPU timing whose host time per call is close to
// its median is named host-bound under the table; others are not.
func TestPrintEvalHostBound(t *testing.T) {
	r := evalReport{
		Kernel: "k.py", Platform: "cuda", Device: "NVIDIA H200", Representative: true,
		Verdict: platform.Verdict{Passed: true},
		Timings: []platform.Timing{
			{Target: "kernel", MedianMS: 0.07, HostMS: 0.02, N: 100, Representative: true},
			{Target: "eager", MedianMS: 0.08, HostMS: 0.01, N: 100, Representative: true},
			{Target: "compile", MedianMS: 0.14, HostMS: 0.13, CV: 0.14, N: 100, Representative: true},
		},
		SpeedupVs: map[string]float64{"eager": 1.14, "compile": 2},
	}
	var b bytes.Buffer
	printEval(&b, r)
	out := b.String()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "host-bound:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "compile takes 0.1300 ms of host time per call against a 0.1400 ms median") {
		t.Fatalf("host-bound lines %q in:\n%s", lines, out)
	}
}

func TestTimingHostBound(t *testing.T) {
	for _, tc := range []struct {
		tm   platform.Timing
		want bool
	}{
		{platform.Timing{MedianMS: 0.1, HostMS: 0.081, Representative: true}, true},
		{platform.Timing{MedianMS: 0.1, HostMS: 0.079, Representative: true}, false},
		{platform.Timing{MedianMS: 0.1, HostMS: 0.5, Representative: false}, false}, // CPU: the host is the clock
		{platform.Timing{MedianMS: 0.1, Representative: true}, false},               // not measured
	} {
		if got := tc.tm.HostBound(); got != tc.want {
			t.Errorf("%+v: HostBound %v, want %v", tc.tm, got, tc.want)
		}
	}
}
