package xpu_test

import (
	"testing"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/gpu"
	"github.com/kagent-kernels/kagent/platform/platformtest"
	"github.com/kagent-kernels/kagent/platform/xpu"
)

// TestConformance runs the conformance suite through the xpu platform.
func TestConformance(t *testing.T) {
	platformtest.RunGPU(t, "Intel Data Center GPU Max 1550", func(cfg platform.Config) (platform.Platform, *gpu.Stack, error) {
		p, err := xpu.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return p, &p.Stack, nil
	})
}
