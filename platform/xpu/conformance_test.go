package xpu_test

import (
	"os"
	"testing"

	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/platform/platformtest"
	"github.com/kagent-dev/kagent/platform/xpu"
)

// TestConformance runs the conformance suite through the xpu platform;
// without its GPU, on the stand-ins of platformtest.WithoutGPU.
func TestConformance(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch and triton) is not set")
	}
	task := platformtest.TritonTask(t, py)
	p, err := xpu.New(platform.Config{Python: py, WarmupMS: 2, RepMS: 10, GPUName: "Intel Data Center GPU Max 1550"})
	if err != nil {
		t.Fatal(err)
	}
	platformtest.WithoutGPU(t, &p.Stack)
	platformtest.Run(t, p, task)
}
