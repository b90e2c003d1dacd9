package ncu

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFilterMatch(t *testing.T) {
	cand := Filter{Names: []string{"rmsnorm_fwd", "elementwise_kernel"}}
	tests := []struct {
		f      Filter
		kernel string
		want   bool
	}{
		{cand, "rmsnorm_fwd", true},
		{cand, "rmsnorm_fwd_0d1d2d3de", true}, // older Triton's signature suffix
		{cand, "rmsnorm_fwd_helper", false},
		{cand, "rmsnorm", false},
		{cand, "elementwise_kernel", true},
		// a torch kernel with the same function name is not the candidate's
		{cand, "void at::native::elementwise_kernel<128, 4, void gpu_kernel_impl_nocast<...>>(int, T3)", false},
		{cand, "void vectorized_elementwise_kernel<4, FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)", false},
		{Filter{}, "axpy", true},
		{Filter{}, "triton_poi_fused_add_0", true},
		{Filter{}, "void at::native::vectorized_elementwise_kernel<4>(int)", false},
		{Filter{}, "void unnamed>::distribution_elementwise_grid_stride_kernel<float, 4>(long)", false},
		{Filter{}, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", false},
		{Filter{}, "cutlass_80_tensorop_s16816gemm", false},
		{Filter{}, "Kernel2", false},
		{Filter{Regex: regexp.MustCompile(`^nvjet_`)}, "nvjet_sm90_tst", true},
		{Filter{Regex: regexp.MustCompile(`^nvjet_`)}, "axpy", false},
		{Filter{Names: []string{"axpy"}, Regex: regexp.MustCompile(`^a`)}, "axpy", true},
		{Filter{Names: []string{"axpy"}, Regex: regexp.MustCompile(`^b`)}, "axpy", false},
	}
	for _, tt := range tests {
		if got := tt.f.Match(tt.kernel); got != tt.want {
			t.Errorf("%+v.Match(%q) = %v, want %v", tt.f.Names, tt.kernel, got, tt.want)
		}
	}
}

func TestFilterNCURegex(t *testing.T) {
	tests := []struct {
		f    Filter
		want string
	}{
		{Filter{Names: []string{"a", "b_c"}}, `^(a|b_c)(_[0-9][0-9a-z]*)?$`},
		{Filter{Regex: regexp.MustCompile(`rms`)}, `rms`},
		{Filter{}, ``},
	}
	for _, tt := range tests {
		if got := tt.f.NCURegex(); got != tt.want {
			t.Errorf("NCURegex() = %q, want %q", got, tt.want)
		}
	}
}

func TestCommandArgs(t *testing.T) {
	tests := []struct {
		name string
		c    Command
		want []string
	}{
		{
			name: "range mark with a kernel filter",
			c: Command{Metrics: []string{MetricTime, MetricMemorySOL}, KernelRegex: `^(axpy)(_[0-9][0-9a-z]*)?$`,
				LogFile: "/tmp/x.csv", MaxLaunches: 64, Program: []string{"python3", "/w/wrap.py"}},
			want: []string{"--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
				"--target-processes", "all", "--profile-from-start", "off",
				"-k", "regex:^(axpy)(_[0-9][0-9a-z]*)?$", "--launch-count", "64",
				"--metrics", MetricTime + "," + MetricMemorySOL, "--log-file", "/tmp/x.csv", "python3", "/w/wrap.py"},
		},
		{
			name: "nvtx mark, no filter",
			c:    Command{Metrics: []string{MetricTime}, Mark: MarkNVTX, Program: []string{"python3", "w.py"}},
			want: []string{"--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
				"--target-processes", "all", "--nvtx", "--nvtx-include", "kagent_profile/",
				"--metrics", MetricTime, "python3", "w.py"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.Args()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Args (-want +got):\n%s", d)
			}
		})
	}
	for _, bad := range []Command{
		{},
		{Program: []string{"p"}, Mark: "count"},
		{Program: []string{"p"}, Metrics: []string{"a,b"}},
	} {
		if _, err := bad.Args(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestDefaultMetrics(t *testing.T) {
	ms := DefaultMetrics()
	if len(KernelAgentMetrics) != 29 {
		t.Errorf("KernelAgent collects 29 metrics, the list has %d", len(KernelAgentMetrics))
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m] {
			t.Errorf("duplicate %s", m)
		}
		seen[m] = true
	}
	for _, m := range append(append([]string{MetricTime, MetricDRAMRead, MetricDRAMWrite, metricTensorAct, fp16FMA, fp32FMA}, KernelAgentMetrics...), OptionalMetrics...) {
		if !seen[m] {
			t.Errorf("missing %s", m)
		}
	}
	if core := CoreMetrics(); len(core) != len(ms)-len(OptionalMetrics) {
		t.Errorf("core %d, default %d, optional %d", len(core), len(ms), len(OptionalMetrics))
	}
}
