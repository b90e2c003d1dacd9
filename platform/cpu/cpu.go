// Package cpu runs the harness on CPU torch, for machines without a GPU and
// for CI: Triton kernels run through TRITON_INTERPRET=1 when triton is
// importable; otherwise candidates are written in plain torch operations.
// Timings are labelled as not representative of GPU performance.
package cpu

import (
	"context"
	"fmt"

	"github.com/kagent-dev/kagent/agent/kerneldir"
	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/platform/worker"
	"github.com/kagent-dev/kagent/roofline"
)

// Name is the registry name.
const Name = "cpu"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform runs kernels on the CPU.
type Platform struct {
	cfg platform.Config
	// Spare keeps a warm replacement worker (default true).
	Spare bool
}

// New builds the cpu platform.
func New(cfg platform.Config) (*Platform, error) { return &Platform{cfg: cfg, Spare: true}, nil }

// Name returns "cpu".
func (p *Platform) Name() string { return Name }

// Executes is true: kernels run, on the CPU.
func (p *Platform) Executes() bool { return true }

// Open starts a CPU worker bound to the task.
func (p *Platform) Open(ctx context.Context, task *kerneldir.Task) (platform.Session, error) {
	if task == nil {
		return nil, fmt.Errorf("cpu: open: no kernel dir")
	}
	return worker.OpenSession(ctx, task, worker.SessionConfig{
		Python: p.cfg.Python, Device: "cpu", Spare: p.Spare, Isolate: true,
		Env:                []string{"TRITON_INTERPRET=1", "CUDA_VISIBLE_DEVICES="},
		TritonIfImportable: true,
		Engine: worker.EngineOptions{
			VerifyTimeout: p.cfg.VerifyTimeout, BenchTimeout: p.cfg.BenchTimeout,
			WarmupMS: p.cfg.WarmupMS, RepMS: p.cfg.RepMS, Representative: false,
		},
	})
}

// Specs describes the CPU: no peaks, so no roofline and no physical-limit check.
func (p *Platform) Specs(context.Context) (roofline.Specs, error) {
	return roofline.Specs{Name: "cpu", Vendor: "cpu", Notes: "timings on the cpu platform are not representative of GPU performance"}, nil
}

// Analyzer is the synthetic roofline analyzer.
func (p *Platform) Analyzer() platform.RooflineAnalyzer {
	return roofline.Analyzer{Config: roofline.DefaultConfig("synthetic")}
}

// Guidance is the platform's advice for prompts.
func (p *Platform) Guidance() string {
	return "CPU platform: kernels run through the Triton interpreter (or plain torch operations when Triton is absent); times are not representative of a GPU."
}

// Interface guards
var _ platform.Platform = (*Platform)(nil)
