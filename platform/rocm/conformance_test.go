package rocm_test

import (
	"testing"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/gpu"
	"github.com/kagent-kernels/kagent/platform/platformtest"
	"github.com/kagent-kernels/kagent/platform/rocm"
)

// TestConformance runs the conformance suite through the rocm platform.
func TestConformance(t *testing.T) {
	platformtest.RunGPU(t, "AMD Instinct MI300X", func(cfg platform.Config) (platform.Platform, *gpu.Stack, error) {
		p, err := rocm.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return p, &p.Stack, nil
	})
}
