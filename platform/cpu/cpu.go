// Package cpu runs the harness on CPU torch, for machines without a GPU and
// for CI. Triton kernels run through Triton's interpreter (TRITON_INTERPRET=1).
// platform_kwargs.triton sets whether candidates must be Triton kernels:
// "auto" (the default) requires them exactly when the worker's Python can
// import triton, "require" always does (a worker without triton fails every
// candidate with a message that says so), "off" accepts candidates written
// in plain torch operations and skips the launch check. Timings are labelled
// as not representative of GPU performance.
package cpu

import (
	"context"
	"fmt"
	"strings"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/roofline"
)

// Name is the registry name.
const Name = "cpu"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// KwargTriton is the platform_kwargs key of the Triton policy.
const KwargTriton = "triton"

// Triton policies (platform_kwargs.triton).
const (
	TritonAuto    = "auto"    // required exactly when triton is importable
	TritonRequire = "require" // always required
	TritonOff     = "off"     // plain torch candidates; no launch check
)

// Platform runs kernels on the CPU.
type Platform struct {
	cfg platform.Config
	// Spare keeps a warm replacement worker (default true).
	Spare bool
	// Triton is the Triton policy (TritonAuto, TritonRequire, TritonOff).
	Triton string
}

// New builds the cpu platform; platform_kwargs.triton must name a policy.
func New(cfg platform.Config) (*Platform, error) {
	p := &Platform{cfg: cfg, Spare: true, Triton: TritonAuto}
	if v, ok := cfg.Kwargs[KwargTriton]; ok {
		switch v = strings.ToLower(strings.TrimSpace(v)); v {
		case TritonAuto, TritonRequire, TritonOff:
			p.Triton = v
		default:
			return nil, fmt.Errorf("cpu: platform_kwargs.%s is %q: want %s, %s or %s", KwargTriton, v, TritonAuto, TritonRequire, TritonOff)
		}
	}
	return p, nil
}

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
		TritonIfImportable: p.Triton == TritonAuto,
		Engine: worker.EngineOptions{
			RequireTriton: p.Triton == TritonRequire,
			VerifyTimeout: p.cfg.VerifyTimeout, BenchTimeout: p.cfg.BenchTimeout, ProfileTimeout: p.cfg.ProfileTimeout,
			WarmupMS: p.cfg.WarmupMS, RepMS: p.cfg.RepMS, Representative: false,
		},
		Logger: p.cfg.Logger,
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

// Interface guards
var _ platform.Platform = (*Platform)(nil)
