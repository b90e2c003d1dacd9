package cuda_test

import (
	"os"
	"testing"

	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/platform/cuda"
	"github.com/kagent-dev/kagent/platform/platformtest"
)

// TestConformance runs the conformance suite through the cuda platform;
// without its GPU, on the stand-ins of platformtest.WithoutGPU.
func TestConformance(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch and triton) is not set")
	}
	task := platformtest.TritonTask(t, py)
	p, err := cuda.New(platform.Config{Python: py, WarmupMS: 2, RepMS: 10, GPUName: "NVIDIA H200"})
	if err != nil {
		t.Fatal(err)
	}
	platformtest.WithoutGPU(t, &p.Stack)
	platformtest.Run(t, p, task)
}
