// Package examples holds the kernel dirs users run. Its test verifies every
// example's real input kernel on the CPU, through the real worker, with
// Triton's interpreter: the examples' kernels are tested wherever the test
// suite runs, not only on a GPU.
package examples

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/pythontest"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cpu"
)

// exampleDirs lists every kernel dir of this folder (a folder with a problem.py).
func exampleDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(e.Name(), kerneldir.ProblemFile)); e.IsDir() && err == nil {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no kernel dirs found")
	}
	return dirs
}

// TestExamplesVerifyOnCPU verifies each example's input kernel at its "cpu"
// size, with its held-out shapes, on the cpu platform with Triton required:
// every check must pass and the Triton launch check must have run. Every
// example must define a "cpu" size so that this test covers it.
func TestExamplesVerifyOnCPU(t *testing.T) {
	py := pythontest.Triton(t)
	cache := t.TempDir()
	for _, name := range exampleDirs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			task, err := kerneldir.Load(ctx, name, kerneldir.LoadOptions{Python: py, CacheDir: cache, RequireKernel: true})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if _, ok := task.Options.Sizes[kerneldir.CPUSize]; !ok {
				t.Fatalf("%s/kagent.yaml has no sizes.%s: every example needs a size the cpu platform can verify it at", name, kerneldir.CPUSize)
			}
			if len(task.Options.Shapes) == 0 {
				t.Errorf("%s/kagent.yaml has no held-out shapes", name)
			}
			if err := task.SelectSize(kerneldir.CPUSize); err != nil {
				t.Fatal(err)
			}
			p, err := cpu.New(platform.Config{Python: py, VerifyTimeout: 10 * time.Minute, BenchTimeout: 10 * time.Minute,
				Kwargs: map[string]string{cpu.KwargTriton: cpu.TritonRequire}})
			if err != nil {
				t.Fatal(err)
			}
			p.Spare = false
			sess, err := p.Open(ctx, task)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer sess.Close()
			v, err := sess.Verify(ctx, platform.Candidate{ID: "input", Path: task.KernelPath, Source: task.KernelSource})
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if !v.Passed {
				t.Fatalf("the input kernel failed %s: %s", v.Failure, v.Reason)
			}
			ran := map[string]bool{}
			for _, c := range v.Checks {
				ran[c.Name] = c.Passed && !c.Skipped
			}
			for _, want := range []string{"static", "correctness", "triton_launch", "extra_shapes", "determinism", "caching"} {
				if !ran[want] {
					t.Errorf("check %s did not run and pass: %+v", want, v.Checks)
				}
			}
			if v.Launches < 1 {
				t.Errorf("no Triton launch counted (%d)", v.Launches)
			}
			t.Logf("%s: verified in %s (%d launches; checks %s)", name, v.Duration.Round(time.Millisecond), v.Launches, checkNames(v.Checks))
		})
	}
}

func checkNames(cs []platform.Check) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}
