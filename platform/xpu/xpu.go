// Package xpu is the xpu platform: Intel GPUs through torch's XPU device; the roofline is synthetic unless a profiler is found.
package xpu

import (
	"context"
	"fmt"

	"github.com/kagent-dev/kagent/agent/kerneldir"
	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/roofline"
)

// Name is the registry name.
const Name = "xpu"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform is the xpu platform.
type Platform struct {
	cfg   platform.Config
	probe platform.Probe
}

// New builds the platform; it does not touch the GPU until Open.
func New(cfg platform.Config) (*Platform, error) {
	return &Platform{cfg: cfg, probe: platform.SystemProbe()}, nil
}

// Name returns "xpu".
func (p *Platform) Name() string { return Name }

// Executes is true: this platform runs kernels.
func (p *Platform) Executes() bool { return true }

// available says what is missing on this machine, if anything.
func (p *Platform) available() error {
	if ok, evidence := p.probe.HasXPU(); !ok {
		return &platform.UnavailableError{Platform: Name, Missing: fmt.Sprintf("an Intel GPU compute stack not found (%s)", evidence), Hint: "run on a machine with an Intel GPU and its oneAPI runtime, or choose another platform with --platform (cuda, cpu, noop)"}
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
	return "Intel GPUs: use the 'xpu' device, sub-group size 16, block sizes 64 to 512, num_warps 4, 8 or 16."
}

type unimplemented struct{}

func (unimplemented) Analyze(roofline.Metrics, roofline.Specs) roofline.Result {
	return roofline.Result{Source: Name, Class: roofline.ClassLatency, Headroom: 100, Warnings: []string{"roofline analysis not implemented on xpu"}}
}

// Interface guards
var (
	_ platform.Platform         = (*Platform)(nil)
	_ platform.RooflineAnalyzer = unimplemented{}
)
