// Package noop is the dry-run platform: it loads everything and executes
// nothing. Verifying, timing and profiling return platform.ErrNotExecuted.
package noop

import (
	"context"
	"fmt"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// Name is the registry name.
const Name = "noop"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform executes nothing.
type Platform struct {
	cfg platform.Config
}

// New builds the noop platform.
func New(cfg platform.Config) (*Platform, error) { return &Platform{cfg: cfg}, nil }

// Name returns "noop".
func (p *Platform) Name() string { return Name }

// Executes is false: nothing runs.
func (p *Platform) Executes() bool { return false }

// Open returns a session whose every operation is ErrNotExecuted.
func (p *Platform) Open(_ context.Context, task *kerneldir.Task) (platform.Session, error) {
	if task == nil {
		return nil, fmt.Errorf("noop: open: no kernel dir")
	}
	return session{}, nil
}

// Specs returns the GPU named in the configuration when one is, else a
// placeholder with no peaks.
func (p *Platform) Specs(context.Context) (roofline.Specs, error) {
	if p.cfg.GPUName != "" {
		if s, err := roofline.Lookup(p.cfg.GPUName); err == nil {
			return s, nil
		}
	}
	return roofline.Specs{Name: "noop (no GPU)", Vendor: "none"}, nil
}

// Analyzer returns the default roofline analyzer.
func (p *Platform) Analyzer() platform.RooflineAnalyzer { return analyzer{} }

type session struct{}

// About is empty: nothing runs.
func (session) About() platform.SessionInfo { return platform.SessionInfo{} }

// Floor is unknown: there is no device.
func (session) Floor(context.Context) (float64, error) {
	return 0, fmt.Errorf("%w: noop has no device", platform.ErrNotExecuted)
}

func (session) Verify(context.Context, platform.Candidate) (platform.Verdict, error) {
	return platform.Verdict{}, platform.ErrNotExecuted
}

func (session) Time(context.Context, platform.Target) (platform.Timing, error) {
	return platform.Timing{}, platform.ErrNotExecuted
}

func (session) Profile(context.Context, platform.Candidate) (roofline.Metrics, error) {
	return roofline.Metrics{}, platform.ErrNotExecuted
}

func (session) Close() error { return nil }

type analyzer struct{}

func (analyzer) Analyze(m roofline.Metrics, s roofline.Specs) roofline.Result {
	return roofline.Result{Source: "noop", Class: roofline.ClassLatency, Headroom: 100}
}

// Interface guards
var (
	_ platform.Platform         = (*Platform)(nil)
	_ platform.Session          = session{}
	_ platform.RooflineAnalyzer = analyzer{}
)
