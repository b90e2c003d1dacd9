// Package platformtest is the conformance suite every platform must pass.
// A platform's own test calls Run with a loaded kernel dir.
package platformtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/gpu"
)

// Run checks the platform's contract against a kernel dir whose input kernel
// is correct. Platforms that execute must verify it as passing and time it
// and the eager baseline; platforms that do not must say so with
// platform.ErrNotExecuted and never claim a result.
func Run(t *testing.T, p platform.Platform, task *kerneldir.Task) {
	t.Helper()
	ctx := context.Background()
	t.Run("identity", func(t *testing.T) {
		if p.Name() == "" {
			t.Fatal("Name() is empty")
		}
		if _, err := platform.Lookup(p.Name()); err != nil {
			t.Errorf("platform %q is not registered under its own name: %v", p.Name(), err)
		}
		if p.Analyzer() == nil {
			t.Error("Analyzer() is nil")
		}
	})
	t.Run("open nil task", func(t *testing.T) {
		if s, err := p.Open(ctx, nil); err == nil {
			s.Close()
			t.Error("Open(nil) succeeded")
		}
	})
	sess, err := p.Open(ctx, task)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := sess.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := sess.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
	good := platform.Candidate{ID: "input", Path: task.KernelPath, Source: task.KernelSource}
	if !p.Executes() {
		t.Run("dry", func(t *testing.T) {
			if v, err := sess.Verify(ctx, good); !errors.Is(err, platform.ErrNotExecuted) || v.Passed {
				t.Errorf("Verify = %+v, %v; want ErrNotExecuted and no pass", v, err)
			}
			if _, err := sess.Time(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: good}); !errors.Is(err, platform.ErrNotExecuted) {
				t.Errorf("Time = %v; want ErrNotExecuted", err)
			}
			if _, err := sess.Profile(ctx, good); !errors.Is(err, platform.ErrNotExecuted) {
				t.Errorf("Profile = %v; want ErrNotExecuted", err)
			}
			if a := sess.About(); a.Device != "" || a.Isolation != "" {
				t.Errorf("About = %+v; want nothing where nothing runs", a)
			}
			if _, err := sess.Floor(ctx); err == nil {
				t.Error("Floor succeeded where nothing runs")
			}
		})
		return
	}
	t.Run("about", func(t *testing.T) {
		a := sess.About()
		if a.Device == "" || a.Isolation == "" {
			t.Errorf("About = %+v: want the device and the isolation of candidates", a)
		}
		if _, err := platform.SpecsOf(ctx, p, sess); err != nil {
			t.Errorf("SpecsOf: %v", err)
		}
	})
	t.Run("verify correct kernel", func(t *testing.T) {
		v, err := sess.Verify(ctx, good)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if !v.Passed {
			t.Fatalf("correct kernel rejected: %s: %s", v.Failure, v.Reason)
		}
		if len(v.Checks) == 0 {
			t.Error("verdict lists no checks")
		}
	})
	t.Run("verify broken kernel", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "broken.py")
		if err := os.WriteFile(bad, []byte("def kernel_function(:\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := sess.Verify(ctx, platform.Candidate{ID: "broken", Path: bad})
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if v.Passed || v.Failure == "" || v.Reason == "" {
			t.Fatalf("broken kernel: %+v; want a named failure with a reason", v)
		}
	})
	t.Run("profile", func(t *testing.T) {
		m, err := sess.Profile(ctx, good)
		if err != nil {
			t.Fatalf("Profile: %v", err)
		}
		if m.Source == "" || !(m.TimeMS > 0) {
			t.Errorf("Profile = %+v: want a source and a time", m)
		}
	})
	t.Run("time", func(t *testing.T) {
		for _, target := range []platform.Target{{Kind: platform.TargetKernel, Candidate: good}, {Kind: platform.TargetEager}} {
			tm, err := sess.Time(ctx, target)
			if err != nil {
				t.Fatalf("Time %s: %v", target.Label(), err)
			}
			if tm.N < 1 || !(tm.MedianMS > 0) || tm.P20MS > tm.MedianMS || tm.MedianMS > tm.P80MS {
				t.Errorf("Time %s = %+v: want n>0, 0 < p20 <= median <= p80", target.Label(), tm)
			}
		}
	})
}

// RunGPU runs the suite through a worker-backed GPU platform (cuda, rocm,
// xpu) that build makes from a config naming gpuName, on a Triton kernel
// dir; without that GPU, on the stand-ins of withoutGPU. It skips without
// KAGENT_PYTHON.
func RunGPU(t *testing.T, gpuName string, build func(platform.Config) (platform.Platform, *gpu.Stack, error)) {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch and triton) is not set")
	}
	task := tritonTask(t, py)
	p, stack, err := build(platform.Config{Python: py, WarmupMS: 2, RepMS: 10, GPUName: gpuName})
	if err != nil {
		t.Fatal(err)
	}
	withoutGPU(t, stack)
	Run(t, p, task)
}

// withoutGPU readies a worker-backed GPU platform's stack for the suite on
// a machine without that GPU, unless KAGENT_CONFORMANCE_REAL=1 (run it on
// the hardware as it is): the driver probe and the GPU list are stood in
// for, torch's device is the CPU (Triton kernels through the interpreter)
// and the profiler is the synthetic one (the vendor profilers need the
// GPU). The rest is the platform's own: its workers and their sandbox, the
// Triton requirement, the specs lookup and the sessions.
func withoutGPU(t *testing.T, s *gpu.Stack) {
	t.Helper()
	if os.Getenv("KAGENT_CONFORMANCE_REAL") == "1" {
		return
	}
	t.Setenv("TRITON_INTERPRET", "1")
	t.Setenv("KAGENT_CONFORMANCE_GPUS", "0")
	s.Probe = func() (bool, string) { return true, "a stand-in for the " + s.Name + " driver" }
	s.GPUs = gpu.Lister{Env: []string{"KAGENT_CONFORMANCE_GPUS"}}
	s.TorchDevice = "cpu"
	s.Profiler = nil
}

// tritonTask is a kernel dir whose input kernel is a Triton kernel (add and
// ReLU), loaded from the worker's test data; call it from a platform's own
// test directory (platform/<name>).
func tritonTask(t *testing.T, python string) *kerneldir.Task {
	t.Helper()
	dir := t.TempDir()
	for src, dst := range map[string]string{
		"../worker/testdata/problems/add_relu/problem.py":   "problem.py",
		"../worker/testdata/candidates/cuda/add_relu_ok.py": "kernel.py",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task, err := kerneldir.Load(context.Background(), dir, kerneldir.LoadOptions{Python: python, CacheDir: t.TempDir(), RequireKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	return task
}
