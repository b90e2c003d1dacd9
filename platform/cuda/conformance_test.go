package cuda_test

import (
	"testing"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cuda"
	"github.com/kagent-kernels/kagent/platform/gpu"
	"github.com/kagent-kernels/kagent/platform/platformtest"
)

// TestConformance runs the conformance suite through the cuda platform.
func TestConformance(t *testing.T) {
	platformtest.RunGPU(t, "NVIDIA H200", func(cfg platform.Config) (platform.Platform, *gpu.Stack, error) {
		p, err := cuda.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return p, &p.Stack, nil
	})
}
