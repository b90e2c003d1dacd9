package cuda_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/kagent-kernels/kagent/configs"
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

// TestNCUProfilerMetricSet: profile_metrics reaches the profiles' ncu command.
func TestNCUProfilerMetricSet(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want []string
	}{
		{"", ncu.DefaultMetrics()},
		{configs.ProfileMetricsFull, ncu.DefaultMetrics()},
		{configs.ProfileMetricsRoofline, ncu.RooflineOnlyMetrics()},
	} {
		pr, err := cuda.NCUProfiler(platform.Config{NCUMetrics: tc.set})(worker.ProfilerSetup{
			HarnessDir: t.TempDir(), Load: worker.LoadRequest{ProblemPath: "problem.py", DType: "fp32", Seeds: []int64{1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := pr.(*ncu.Profiler).Metrics(); !slices.Equal(got, tc.want) {
			t.Errorf("profile_metrics %q: %d metrics %v, want %d", tc.set, len(got), got, len(tc.want))
		}
	}
}
