package rocprof_test

import (
	"context"
	"fmt"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/profiler/rocprof"
	"github.com/kagent-kernels/kagent/profiler/synthetic"
	"github.com/kagent-kernels/kagent/roofline"
)

// How a platform package wires the profiler: platform_kwargs give the
// binary, Prepare turns a candidate into a request (the rendered wrapper,
// the candidate's @triton.jit names, the launches per call, and what a
// synthetic fallback needs), and the profiler's Analyzer applies rocprof's
// thresholds.
func Example() {
	var cfg rocprof.Config
	if err := cfg.ApplyKwargs(map[string]string{"rocprof_bin_path": "/opt/rocm/bin/rocprofv3"}); err != nil {
		panic(err)
	}
	cfg.Specs = roofline.Specs{Name: "AMD Instinct MI300X", Target: "gfx942", WarpSize: 64, MemBWGBs: 5300, BF16TFLOPS: 1307.4}
	cfg.Prepare = func(ctx context.Context, c platform.Candidate) (rocprof.Request, error) {
		return rocprof.Request{
			Wrapper: rocprof.Wrapper{Script: "/run/wrappers/" + c.ID + ".py"},
			Filter:  rocprof.Filter{Names: []string{"rmsnorm_fwd"}},
			Window:  rocprof.Window{Last: 1}, // one launch per call
			DType:   "bf16",
			Synthetic: rocprof.SyntheticInput{
				Work: synthetic.Work{
					Inputs:  []synthetic.Tensor{{Shape: []int64{4096, 8192}, DType: "torch.bfloat16"}},
					Outputs: []synthetic.Tensor{{Shape: []int64{4096, 8192}, DType: "torch.bfloat16"}},
				},
				TimeMS: 0.031, // the benchmarker's median
			},
		}, nil
	}
	p, err := rocprof.New(cfg)
	if err != nil {
		panic(err)
	}
	var _ platform.Profiler = p
	var _ platform.RooflineAnalyzer = p.Analyzer()
	fmt.Println(rocprof.DefaultPasses(cfg.Specs.Target, "bf16")[0].Counters)
	// Output:
	// [SQ_WAVES SQ_INSTS_VALU SQ_INSTS_SALU SQ_INSTS_VMEM_RD SQ_INSTS_VMEM_WR SQ_INSTS_LDS SQ_INSTS_VALU_MFMA_MOPS_BF16]
}
