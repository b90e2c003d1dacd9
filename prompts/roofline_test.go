package prompts

import (
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/roofline"
)

// TestUnplacedRooflineLeftOut: a kernel the roofline could not place (the
// cpu platform has no peak figures) gets no roofline lines in the prompts,
// not "0% of peak, 100% headroom"; a placed one gets them.
func TestUnplacedRooflineLeftOut(t *testing.T) {
	s := Default()
	unplaced := roofline.Result{Class: roofline.ClassUnknown, Unplaced: roofline.UnplacedNoPeaks, Source: "synthetic",
		Warnings: []string{"no peak bandwidth for cpu: memory SOL not computed"}}
	for _, tc := range []struct {
		r    roofline.Result
		want bool
	}{{unplaced, false}, {before, true}} {
		d, err := s.Diagnose(DiagnoseData{Target: cudaTarget, Problem: problem, Kernel: kernel, Times: Timings{KernelMS: 1}, Roofline: tc.r, NumBottlenecks: 1})
		if err != nil {
			t.Fatal(err)
		}
		o, err := s.Optimize(OptimizeData{Target: cudaTarget, Problem: problem, Kernel: kernel, Times: Timings{KernelMS: 1}, Roofline: tc.r,
			Bottleneck: memBottleneck})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct{ name, text, line string }{
			{"diagnose", d.User, "- Headroom to the roofline:"},
			{"optimize", o.User, "% headroom"},
		} {
			if got := strings.Contains(p.text, p.line); got != tc.want {
				t.Errorf("%s prompt, roofline %s: holds %q: %v, want %v", p.name, tc.r.Class, p.line, got, tc.want)
			}
		}
	}
}
