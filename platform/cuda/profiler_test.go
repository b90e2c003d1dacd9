package cuda_test

import (
	"maps"
	"testing"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cuda"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/profiler/ncu"
)

// TestNCUProfilerProfilesTheTimedSize: a run timed at --size must be
// profiled at that size, or the profile's bytes and FLOPs (of another
// shape) are set against a time they were not measured with.
func TestNCUProfilerProfilesTheTimedSize(t *testing.T) {
	size := map[string]any{"batch_size": 16}
	pr, err := cuda.NCUProfiler(platform.Config{})(worker.ProfilerSetup{
		HarnessDir: t.TempDir(),
		Load:       worker.LoadRequest{ProblemPath: "problem.py", DType: "fp32", Seeds: []int64{1, 2, 3}, Size: size},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pr.(*ncu.Profiler)
	if !ok {
		t.Fatalf("profiler is %T, want *ncu.Profiler", pr)
	}
	if got := p.Wrapper().ShapeOverride; !maps.Equal(got, size) {
		t.Errorf("profiled size %v, want the timed size %v", got, size)
	}
}
