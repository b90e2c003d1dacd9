package kerneldir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodProblem = `import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

n = 8

def get_inputs():
    return [torch.rand(n)]

def get_init_inputs():
    return []
`

const goodKernel = `import triton

@triton.jit
def _k(x_ptr):
    pass

def kernel_function(x):
    return x
`

func python() string {
	if p := os.Getenv("KAGENT_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

func load(t *testing.T, dir string) (*Task, error) {
	t.Helper()
	return Load(context.Background(), dir, LoadOptions{Python: python(), CacheDir: t.TempDir(), RequireKernel: true})
}

func makeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadExample(t *testing.T) {
	task, err := load(t, "../examples/rmsnorm")
	if err != nil {
		t.Fatal(err)
	}
	if task.Entry != EntryKernelFunction || task.Name != "rmsnorm" || task.Options.DType != "fp32" || len(task.Options.Shapes) != 2 {
		t.Errorf("unexpected task: %+v", task)
	}
	if !filepath.IsAbs(task.ProblemPath) || !strings.HasSuffix(task.KernelPath, "input.py") {
		t.Errorf("paths: %q %q", task.ProblemPath, task.KernelPath)
	}
}

func TestLoadModelNewEntry(t *testing.T) {
	dir := makeDir(t, map[string]string{"problem.py": goodProblem, "kernel.py": "class ModelNew:\n    pass\n", "test.py": "import sys\n"})
	task, err := load(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if task.Entry != EntryModelNew || task.TestPath == "" {
		t.Errorf("entry %q test %q", task.Entry, task.TestPath)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"missing problem.py", map[string]string{"input.py": goodKernel}, []string{"problem.py not found", "class Model"}},
		{"problem without get_inputs", map[string]string{"problem.py": strings.Replace(goodProblem, "def get_inputs", "def make_inputs", 1), "input.py": goodKernel}, []string{"problem.py: missing get_inputs()"}},
		{"problem without Model", map[string]string{"problem.py": strings.Replace(goodProblem, "class Model", "class Net", 1), "input.py": goodKernel}, []string{"problem.py: missing class Model"}},
		{"syntax error in kernel", map[string]string{"problem.py": goodProblem, "input.py": "import triton\n\ndef kernel_function(x:\n    return x\n"}, []string{"input.py:3: syntax error"}},
		{"no kernel", map[string]string{"problem.py": goodProblem}, []string{"no input.py", "kagent generate"}},
		{"two kernels", map[string]string{"problem.py": goodProblem, "input.py": goodKernel, "kernel.py": goodKernel}, []string{"both input.py and kernel.py"}},
		{"no entry point", map[string]string{"problem.py": goodProblem, "input.py": "def run(x):\n    return x\n"}, []string{"input.py: defines neither kernel_function nor class ModelNew"}},
		{"unknown option key", map[string]string{"problem.py": goodProblem, "input.py": goodKernel, "kagent.yaml": "dtype: fp16\natoll: 1e-3\n"}, []string{"kagent.yaml:2:", `unknown key "atoll"; did you mean "atol"?`}},
		{"unknown option key, nothing close", map[string]string{"problem.py": goodProblem, "input.py": goodKernel, "kagent.yaml": "speed: max\n"}, []string{"kagent.yaml:1:", `unknown key "speed" (known: name, dtype, atol, rtol, tf32, allow_inplace, shapes, sizes, atomics)`}},
		{"malformed options", map[string]string{"problem.py": goodProblem, "input.py": goodKernel, "kagent.yaml": "dtype: [fp16\n"}, []string{"kagent.yaml:"}},
		{"bad dtype", map[string]string{"problem.py": goodProblem, "input.py": goodKernel, "kagent.yaml": "dtype: fp64\n"}, []string{"kagent.yaml", `dtype "fp64"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := makeDir(t, tc.files)
			_, err := load(t, dir)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error is not ErrInvalid: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the dir %s", err, dir)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadNotADir(t *testing.T) {
	if _, err := load(t, "/no/such/dir"); !errors.Is(err, ErrInvalid) {
		t.Errorf("missing dir: %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(f, nil, 0o644)
	if _, err := load(t, f); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("file as dir: %v", err)
	}
}

func TestNoPython(t *testing.T) {
	dir := makeDir(t, map[string]string{"problem.py": goodProblem, "input.py": goodKernel})
	_, err := Load(context.Background(), dir, LoadOptions{Python: "/no/such/python3", CacheDir: t.TempDir(), RequireKernel: true})
	if !errors.Is(err, ErrNoPython) {
		t.Fatalf("Load with no python = %v", err)
	}
}

func TestSelectSize(t *testing.T) {
	task := &Task{Dir: "/k", Options: Options{Sizes: map[string]map[string]any{"cpu": {"batch_size": 2, "dim": 64}}}}
	if err := task.SelectSize("cpu"); err != nil || task.Options.SizeName != "cpu" || task.Options.Size["dim"] != 64 {
		t.Fatalf("SelectSize(cpu) = %v, %+v", err, task.Options)
	}
	if got := task.Options.SizeLabel(); got != "cpu (batch_size=2,dim=64)" {
		t.Errorf("label %q", got)
	}
	task.Options.Size["dim"] = 1 // the selection is a copy
	if task.Options.Sizes["cpu"]["dim"] != 64 {
		t.Errorf("SelectSize shares its map with kagent.yaml's sizes")
	}
	if err := task.SelectSize(" batch_size=3, eps=1e-3 ,name=x,flag=true"); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"batch_size": int64(3), "eps": 1e-3, "name": "x", "flag": true}
	for k, v := range want {
		if task.Options.Size[k] != v {
			t.Errorf("size[%s] = %#v, want %#v", k, task.Options.Size[k], v)
		}
	}
	if task.Options.SizeName != "" || task.Options.SizeLabel() != "batch_size=3,eps=0.001,flag=true,name=x" {
		t.Errorf("explicit pairs: name %q label %q", task.Options.SizeName, task.Options.SizeLabel())
	}
	if err := task.SelectSize(""); err != nil || task.Options.Size != nil || task.Options.SizeLabel() != "default" {
		t.Errorf("empty spec: %v %+v", err, task.Options.Size)
	}
	for spec, frag := range map[string]string{
		"huge":          `size "huge" is not a size of /k (its sizes: cpu)`,
		"batch_size=":   "key=value pairs",
		"2x=3":          "key=value pairs",
		"batch_size=2,": "key=value pairs",
	} {
		err := task.SelectSize(spec)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), frag) {
			t.Errorf("SelectSize(%q) = %v, want %q", spec, err, frag)
		}
	}
}

func TestSizesValidated(t *testing.T) {
	err := validateOptions(Options{Sizes: map[string]map[string]any{"a=b": {"x": 1}, "empty": {}}}, "kagent.yaml")
	if err == nil || !strings.Contains(err.Error(), `name "a=b"`) || !strings.Contains(err.Error(), "sizes.empty is empty") {
		t.Errorf("validateOptions = %v", err)
	}
}
