package noop_test

import (
	"context"
	"os"
	"testing"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/noop"
	"github.com/kagent-kernels/kagent/platform/platformtest"
)

func TestConformance(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		py = "python3"
	}
	task, err := kerneldir.Load(context.Background(), "../../examples/rmsnorm", kerneldir.LoadOptions{Python: py, CacheDir: t.TempDir(), RequireKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := noop.New(platform.Config{})
	if err != nil {
		t.Fatal(err)
	}
	platformtest.Run(t, p, task)
}
