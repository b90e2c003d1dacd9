package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// TestPrintProfileNoPeaks: on a platform without peak figures (cpu),
// `kagent profile` prints n/a with the reason for SOL, class and headroom,
// and a small achieved bandwidth with its digits, not 0.
func TestPrintProfileNoPeaks(t *testing.T) {
	m := roofline.Metrics{Source: "synthetic", TimeMS: 158, BytesRead: 262144, BytesWrite: 262144}
	rep := profileReport{Kernel: "input.py", Platform: "cpu", GPU: "cpu", Metrics: m,
		Roofline: roofline.Analyze(m, roofline.Specs{Name: "cpu"}, roofline.Config{})}
	var b bytes.Buffer
	printProfile(&b, rep)
	out := b.String()
	for _, want := range []string{"bytes read / written  262 kB / 262 kB\n", "achieved bandwidth    0.00332 GB/s\n", "SOL                   n/a (the platform has no peak figures)\n",
		"class                 n/a (the platform has no peak figures)\n", "headroom              n/a (the platform has no peak figures)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("profile output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"0.0%", "100.0%", " 0 GB/s", "0.000", "latency", "at roofline"} {
		if strings.Contains(out, bad) {
			t.Errorf("profile output holds %q:\n%s", bad, out)
		}
	}

	// On a GPU the figures are printed.
	h200, err := roofline.Lookup("NVIDIA H200")
	if err != nil {
		t.Fatal(err)
	}
	m = roofline.Metrics{Source: "synthetic", TimeMS: 1, BytesRead: 2.4e9, BytesWrite: 1.2e9}
	rep.Roofline = roofline.Analyze(m, h200, roofline.Config{})
	rep.Metrics = m
	b.Reset()
	printProfile(&b, rep)
	for _, want := range []string{"bytes read / written  2.4 GB / 1.2 GB\n", "achieved bandwidth    3600 GB/s\n", "memory SOL            75.0%\n", "class                 memory\n", "headroom              25.0%\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("profile output on a GPU lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPrintResultRoofline: the run summary says "roofline: n/a (why)" for
// an unplaced best kernel, and its class and SOL for a placed one.
func TestPrintResultRoofline(t *testing.T) {
	for _, tc := range []struct {
		r    *roofline.Result
		want string
	}{
		{&roofline.Result{Class: roofline.ClassUnknown, Unplaced: roofline.UnplacedNoPeaks, Source: "synthetic"},
			"roofline: n/a (the platform has no peak figures)\n"},
		{&roofline.Result{Class: roofline.ClassMemory, SOL: 87.4, Source: "ncu"}, "roofline: memory-bound, 87.4% SOL (ncu)\n"},
	} {
		res := agent.Result{RunID: "r", RunDir: "/runs/r", Best: agent.Kernel{ID: "input", Timing: platform.Timing{MedianMS: 1}, Roofline: tc.r}}
		var b bytes.Buffer
		printResult(&b, res)
		if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), "0.0% SOL") {
			t.Errorf("output lacks %q:\n%s", tc.want, b.String())
		}
	}
}
