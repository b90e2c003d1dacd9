package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/roofline"
)

// pythonOutput runs a Python one-liner and returns its output, trimmed.
func pythonOutput(t *testing.T, py, code string) string {
	t.Helper()
	out, err := exec.Command(py, "-c", code).Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v", py, code, err)
	}
	return strings.TrimSpace(string(out))
}

// venvWithout makes a throwaway virtual environment from $KAGENT_PYTHON's
// base interpreter that cannot import module: "torch" gives a bare venv;
// "triton" one that finds $KAGENT_PYTHON's packages (torch too) but whose
// own site-packages holds a triton that fails to import as a missing one
// does. It returns the venv's python.
func venvWithout(t *testing.T, module string) string {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	base := pythonOutput(t, py, "import sys; print(sys._base_executable)")
	dir := filepath.Join(t.TempDir(), "venv-without-"+module)
	if out, err := exec.Command(base, "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		t.Fatalf("python -m venv: %v\n%s", err, out)
	}
	venvPy := filepath.Join(dir, "bin", "python")
	if module == "triton" {
		site := pythonOutput(t, venvPy, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
		theirs := pythonOutput(t, py, "import sysconfig; p = sysconfig.get_paths(); print(p['purelib']); print(p['platlib'])")
		files := map[string]string{
			"kagent-test-packages.pth": theirs + "\n",
			"triton/__init__.py":       "raise ModuleNotFoundError(\"No module named 'triton'\", name='triton')\n",
		}
		for name, text := range files {
			p := filepath.Join(site, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := "import " + module
	if err := exec.Command(venvPy, "-c", check).Run(); err == nil {
		t.Fatalf("%s can import %s", venvPy, module)
	}
	if module == "triton" {
		pythonOutput(t, venvPy, "import torch")
	}
	return venvPy
}

// TestMachineLacks: a machine without torch, without triton where the
// kernel imports it, or whose device memory cannot hold the problem makes
// eval, profile and optimize exit 4 with one line that names what is
// missing and what to do, never blaming the kernel.
func TestMachineLacks(t *testing.T) {
	dir := cpuKernelDir(t)
	// The same kernel importing triton (the cpu platform then needs it).
	tdir := filepath.Join(t.TempDir(), "imports_triton")
	if err := os.CopyFS(tdir, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "input.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tdir, "input.py"), append([]byte("import triton\n"), src...), 0o644); err != nil {
		t.Fatal(err)
	}
	noTorch, noTriton := venvWithout(t, "torch"), venvWithout(t, "triton")
	lacks := []struct {
		name string
		dir  string
		env  []string
		args []string
		want []string
	}{
		{"torch", dir, nil, []string{"--python", noTorch},
			[]string{"this machine lacks torch: " + noTorch + " cannot import torch", "pip install torch", "--python"}},
		{"triton", tdir, nil, []string{"--python", noTriton},
			[]string{"this machine lacks triton: " + noTriton, "cannot import triton, and the kernel (input.py) imports it", "pip install triton"}},
		{"memory", dir, []string{"KAGENT_MEMORY_LIMIT=1M"}, nil,
			[]string{"this machine lacks the device memory this problem needs", "the problem needs about", "time a smaller size", "KAGENT_MEMORY_LIMIT=1M"}},
	}
	commands := [][]string{{"eval"}, {"profile"}, {"optimize", "--strategy", "tune", "--max-rounds", "1"}}
	for _, l := range lacks {
		for _, cmd := range commands {
			t.Run(l.name+"/"+cmd[0], func(t *testing.T) {
				args := append(append(append([]string(nil), cmd...), "--kernel-dir", ".", "--platform", "cpu"), l.args...)
				r := runEnv(t, l.dir, l.env, args...)
				oneLineError(t, r, ExitUnavailable, l.want...)
				if strings.Contains(r.stderr, "fix the input kernel") {
					t.Errorf("the kernel is blamed: %s", r.stderr)
				}
			})
		}
	}
}

// TestSweepMachineLacks: a sweep on a machine without torch, or without
// triton where the platform requires it, stops at its first problem with
// exit code 4; problems too large for the device's memory end on an error
// each, the sweep goes on, and it exits 4 naming them.
func TestSweepMachineLacks(t *testing.T) {
	if os.Getenv("KAGENT_PYTHON") == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	srv := sweepServer(t)
	cfg := sweepConfig(t, srv)
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	common := []string{"sweep", "--kernelbench", src, "--level", "1", "--problems", "1,6", "--config", cfg, "--seeds", "1", "--out", "out"}
	noTorch, noTriton := venvWithout(t, "torch"), venvWithout(t, "triton")

	// A sweep logs as it goes: its error is the last line on stderr.
	lastLine := func(r result, want ...string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		last := lines[len(lines)-1]
		if r.code != ExitUnavailable || !strings.HasPrefix(last, "kagent: ") || strings.Contains(r.stderr, "Traceback") {
			t.Errorf("exit %d, want %d; stderr:\n%s", r.code, ExitUnavailable, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(last, w) {
				t.Errorf("last line %q does not contain %q", last, w)
			}
		}
	}
	r := run(t, t.TempDir(), append(common, "--python", noTorch)...)
	lastLine(r, "this machine lacks torch: "+noTorch)
	if !strings.Contains(r.stdout, "0 of 2 problems have a result") {
		t.Errorf("the sweep did not stop at its first problem:\n%s", r.stdout)
	}

	r = runEnv(t, t.TempDir(), []string{"KAGENT_PLATFORM_KWARGS=triton=require"}, append(common, "--python", noTriton)...)
	lastLine(r, "this machine lacks triton: "+noTriton, "platform_kwargs.triton is require", "triton=off")

	r = runEnv(t, t.TempDir(), []string{"KAGENT_MEMORY_LIMIT=1M"}, common...)
	lastLine(r, "2 problem(s) need more device memory than this machine has (1_Add, 6_Swish)", "KAGENT_MEMORY_LIMIT=1M", "0 other(s)")
	if !strings.Contains(r.stdout, "2 of 2 problems have a result: 0 correct, 0 failed, 2 errors") {
		t.Errorf("the sweep did not go on after a problem too large:\n%s", r.stdout)
	}
}

// TestAsLack: which errors say the machine lacks something (exit 4), and
// the line each gives.
func TestAsLack(t *testing.T) {
	startup := func(msg string) error {
		return fmt.Errorf("start worker: handshake: %w", &worker.ReplyError{Kind: "startup", Message: msg, Fatal: true})
	}
	oom := &worker.ReplyError{Kind: "oom", Message: "problem.py: the problem needs about 80.0 GiB of device memory ...: time a smaller size"}
	t.Setenv("KAGENT_MEMORY_LIMIT", "")
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for no lack
	}{
		{"no torch", startup("worker start-up failed: ModuleNotFoundError: No module named 'torch'"),
			"this machine lacks torch: the worker's Python cannot import torch; install it into that Python (pip install torch"},
		{"no triton at start-up", startup("worker start-up failed: ModuleNotFoundError: No module named 'triton'"),
			"this machine lacks triton: the worker's Python cannot import triton"},
		{"device fails", startup("worker start-up failed: RuntimeError: CUDA error: no CUDA-capable device is detected"),
			"this machine lacks a working Python worker: it failed to start: worker start-up failed: RuntimeError: CUDA error"},
		{"problem too large", fmt.Errorf("time eager baseline: %w", &worker.ProblemError{Err: oom}),
			"this machine lacks the device memory this problem needs: problem.py: the problem needs about 80.0 GiB"},
		{"a candidate out of memory", fmt.Errorf("verify r1c1: %w", oom), ""},
		{"a problem that fails", &worker.ProblemError{Err: &worker.ReplyError{Kind: "load", Message: "NameError"}}, ""},
		{"an input kernel rejected", errors.New("input kernel failed verification: static: ..."), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			le := asLack(tc.err)
			switch {
			case tc.want == "" && le != nil:
				t.Errorf("asLack = %q, want none", le)
			case tc.want != "" && (le == nil || !strings.HasPrefix(le.Error(), tc.want)):
				t.Errorf("asLack = %v, want %q...", le, tc.want)
			case tc.want != "" && exitCode(tc.err) != ExitUnavailable:
				t.Errorf("exit code %d, want %d", exitCode(tc.err), ExitUnavailable)
			}
			var b strings.Builder
			report(&b, tc.err)
			if tc.want != "" && b.String() != "kagent: "+le.Error()+"\n" {
				t.Errorf("report wrote %q", b.String())
			}
		})
	}
}

// TestNeedsTriton: when a session without triton cannot run the kernel.
func TestNeedsTriton(t *testing.T) {
	withImport := &kerneldir.Task{KernelPath: "/k/input.py", KernelSource: "import torch\nimport triton.language as tl\n"}
	plain := &kerneldir.Task{KernelPath: "/k/input.py", KernelSource: "import torch\n# import triton would be faster\ns = 'from triton'\n"}
	for _, tc := range []struct {
		policy string
		task   *kerneldir.Task
		want   string
	}{
		{"", plain, "the cuda platform runs Triton kernels"},
		{"require", plain, "platform_kwargs.triton is require"},
		{"auto", withImport, "the kernel (input.py) imports it"},
		{"off", withImport, "the kernel (input.py) imports it"},
		{"auto", plain, ""},
		{"off", plain, ""},
	} {
		p := &checkedPlatform{Platform: namedPlatform("cuda"), tritonPolicy: tc.policy}
		if got := p.needsTriton(tc.task); got != tc.want {
			t.Errorf("policy %q, kernel %q: %q, want %q", tc.policy, tc.task.KernelSource, got, tc.want)
		}
	}
}

// namedPlatform is a platform with a name and nothing else.
type namedPlatform string

func (n namedPlatform) Name() string { return string(n) }
func (namedPlatform) Open(context.Context, *kerneldir.Task) (platform.Session, error) {
	return nil, errors.New("not here")
}
func (namedPlatform) Specs(context.Context) (roofline.Specs, error) { return roofline.Specs{}, nil }
func (namedPlatform) Analyzer() platform.RooflineAnalyzer           { return nil }
func (namedPlatform) Executes() bool                                { return true }
