package prompts

import (
	"reflect"
	"testing"

	"github.com/kagent-kernels/kagent/roofline"
)

func TestNewTarget(t *testing.T) {
	gpu := roofline.Specs{Name: "H200"}
	for _, tc := range []struct {
		name, target, platform string
		executes               bool
		entry, tf32            string
		want                   Target
	}{
		{"target_platform wins", "rocm", "cuda", true, "", "", Target{Platform: "rocm", GPU: gpu, Entry: EntryKernelFunction}},
		{"the run's platform", "", "cpu", true, "ModelNew", "allow", Target{Platform: "cpu", GPU: gpu, Entry: EntryModelNew, AllowTF32: true}},
		{"a platform that runs nothing writes for cuda", "", "noop", false, "kernel_function", "forbid", Target{Platform: "cuda", GPU: gpu, Entry: EntryKernelFunction}},
	} {
		if got := NewTarget(tc.target, tc.platform, tc.executes, gpu, tc.entry, tc.tf32); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
