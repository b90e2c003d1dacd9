// Package rocm is the rocm platform: AMD GPUs through ROCm: the worker harness on torch's HIP device, rocprofv3 for counters.
package rocm

import (
	"context"
	"fmt"

	"github.com/kagent-dev/kagent/agent/kerneldir"
	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/roofline"
)

// Name is the registry name.
const Name = "rocm"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform is the rocm platform.
type Platform struct {
	cfg   platform.Config
	probe platform.Probe
}

// New builds the platform; it does not touch the GPU until Open.
func New(cfg platform.Config) (*Platform, error) {
	return &Platform{cfg: cfg, probe: platform.SystemProbe()}, nil
}

// Name returns "rocm".
func (p *Platform) Name() string { return Name }

// Executes is true: this platform runs kernels.
func (p *Platform) Executes() bool { return true }

// available says what is missing on this machine, if anything.
func (p *Platform) available() error {
	if ok, evidence := p.probe.HasROCm(); !ok {
		return &platform.UnavailableError{Platform: Name, Missing: fmt.Sprintf("ROCm not found (%s)", evidence), Hint: "run on a machine with an AMD GPU and ROCm installed, or choose another platform with --platform (cuda, cpu, noop)"}
	}
	return nil
}

// Open checks the machine and binds the platform to a kernel dir.
func (p *Platform) Open(_ context.Context, task *kerneldir.Task) (platform.Session, error) {
	if err := p.available(); err != nil {
		return nil, err
	}
	return nil, &platform.NotImplementedError{Platform: Name, What: "verification and timing"}
}

// Specs looks up the configured GPU name.
func (p *Platform) Specs(context.Context) (roofline.Specs, error) {
	if p.cfg.GPUName == "" {
		if err := p.available(); err != nil {
			return roofline.Specs{}, err
		}
		return roofline.Specs{}, &platform.NotImplementedError{Platform: Name, What: "GPU detection (set gpu_name)"}
	}
	return roofline.Lookup(p.cfg.GPUName)
}

// Analyzer is not available yet.
func (p *Platform) Analyzer() platform.RooflineAnalyzer { return unimplemented{} }

// Guidance is the platform's advice for prompts.
func (p *Platform) Guidance() string {
	return "AMD GPUs run 64-wide wavefronts: use block sizes in multiples of 64 and num_warps 4 or 8."
}

type unimplemented struct{}

func (unimplemented) Analyze(roofline.Metrics, roofline.Specs) roofline.Result {
	return roofline.Result{Source: Name, Class: roofline.ClassLatency, Headroom: 100, Warnings: []string{"roofline analysis not implemented on rocm"}}
}

// Interface guards
var (
	_ platform.Platform         = (*Platform)(nil)
	_ platform.RooflineAnalyzer = unimplemented{}
)
