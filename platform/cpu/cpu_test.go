package cpu_test

import (
	"context"
	"os"
	"testing"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cpu"
	"github.com/kagent-kernels/kagent/platform/platformtest"
)

// TestConformance runs the platform conformance suite on CPU torch with the
// agent's CPU test problem (a kernel written in plain torch operations).
func TestConformance(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	task, err := kerneldir.Load(context.Background(), "../../agent/testdata/relu_scale", kerneldir.LoadOptions{Python: py, CacheDir: t.TempDir(), RequireKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cpu.New(platform.Config{Python: py, WarmupMS: 2, RepMS: 10, Kwargs: map[string]string{cpu.KwargTriton: cpu.TritonOff}})
	if err != nil {
		t.Fatal(err)
	}
	platformtest.Run(t, p, task)
}
