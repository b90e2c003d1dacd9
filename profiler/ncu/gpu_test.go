//go:build gpu

// GPU test: profiles a real Triton kernel with the real ncu. Run on an
// NVIDIA machine whose user may read the performance counters:
//
//	go test -tags gpu -run GPU -v ./profiler/ncu/
//
// KAGENT_HARNESS_DIR names the directory holding kagent_harness (default:
// the repository's harness); KAGENT_NCU the ncu binary.

package ncu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

const gpuProblem = `
import torch
n = 1 << 26
class Model(torch.nn.Module):
    def forward(self, x, y):
        return 2.0 * x + y
def get_inputs():
    return [torch.randn(n), torch.randn(n)]
def get_init_inputs():
    return []
`

const gpuCandidate = `
import torch
import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": 1024}, num_warps=4),
                          triton.Config({"BLOCK": 4096}, num_warps=8)], key=["n"])
@triton.jit
def axpy(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = (offs < n) & (offs >= 0)
    tl.store(o_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

def kernel_function(x, y):
    o = torch.zeros_like(x)  # a PyTorch fill kernel, which the filter drops
    n = x.numel()
    axpy[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, o, n)
    return o
`

func TestGPUProfileAxpy(t *testing.T) {
	harness := os.Getenv("KAGENT_HARNESS_DIR")
	if harness == "" {
		harness, _ = filepath.Abs(filepath.Join("..", "..", "harness"))
	}
	if _, err := os.Stat(filepath.Join(harness, "kagent_harness", "loading.py")); err != nil {
		t.Skipf("no harness at %s: %v", harness, err)
	}
	dir := t.TempDir()
	prob := filepath.Join(dir, "problem.py")
	cand := filepath.Join(dir, "kernel.py")
	os.WriteFile(prob, []byte(gpuProblem), 0o644)
	os.WriteFile(cand, []byte(gpuCandidate), 0o644)
	p, err := New(Config{NCUPath: os.Getenv("KAGENT_NCU"), HarnessDir: harness, ProblemPath: prob,
		DType: "fp32", WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m, err := p.Profile(context.Background(), platform.Candidate{ID: "gpu", Path: cand, Source: gpuCandidate})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("profiled in %s: %+v", time.Since(start), m)
	if len(m.Kernels) != 1 || m.Kernels[0] != "axpy" {
		t.Errorf("kernels %q (the fill kernel must be dropped, autotune trials not counted)", m.Kernels)
	}
	const n = 1 << 26
	// One call: 2n fp32 FLOPs (one FMA per element), 8n bytes read.
	if m.FLOPs != 2*n || m.BytesRead < 8*n*0.99 || m.BytesRead > 8*n*1.01 {
		t.Errorf("flops %v bytes read %v: not exactly one call", m.FLOPs, m.BytesRead)
	}
	specs, err := roofline.Lookup("NVIDIA H200")
	if err != nil {
		t.Fatal(err)
	}
	r := roofline.Analyze(m, specs, roofline.Config{})
	t.Logf("roofline: %+v", r)
	if r.Class != roofline.ClassMemory {
		t.Errorf("axpy class %s, want memory", r.Class)
	}
}

const gpuModelNew = `
import torch
import triton
import triton.language as tl

@triton.jit
def axpy_mn(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        o = torch.empty_like(x)
        n = x.numel()
        axpy_mn[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
        return o
`

// TestGPUProfileModelNewShapeOverride profiles a ModelNew entry on an
// overridden shape (n = 2^20 instead of 2^26), in bf16.
func TestGPUProfileModelNewShapeOverride(t *testing.T) {
	harness := os.Getenv("KAGENT_HARNESS_DIR")
	if harness == "" {
		harness, _ = filepath.Abs(filepath.Join("..", "..", "harness"))
	}
	if _, err := os.Stat(filepath.Join(harness, "kagent_harness", "loading.py")); err != nil {
		t.Skipf("no harness at %s: %v", harness, err)
	}
	dir := t.TempDir()
	prob := filepath.Join(dir, "problem.py")
	cand := filepath.Join(dir, "kernel.py")
	os.WriteFile(prob, []byte(gpuProblem), 0o644)
	os.WriteFile(cand, []byte(gpuModelNew), 0o644)
	p, err := New(Config{NCUPath: os.Getenv("KAGENT_NCU"), HarnessDir: harness, ProblemPath: prob,
		DType: "bf16", Entry: "ModelNew", ShapeOverride: map[string]any{"n": 1 << 20}, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := p.Profile(context.Background(), platform.Candidate{ID: "mn", Path: cand, Source: gpuModelNew})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", m)
	const n = 1 << 20
	if len(m.Kernels) != 1 || m.Kernels[0] != "axpy_mn" || m.BytesRead < 4*n*0.99 || m.BytesRead > 4*n*1.05 {
		t.Errorf("kernels %q bytes read %v, want 4n = %d (two bf16 inputs of the overridden n)", m.Kernels, m.BytesRead, 4*n)
	}
}

// TestGPUProfileBrokenCandidate checks that a candidate that fails to load
// gives the harness's reason, not only a traceback.
func TestGPUProfileBrokenCandidate(t *testing.T) {
	harness := os.Getenv("KAGENT_HARNESS_DIR")
	if harness == "" {
		harness, _ = filepath.Abs(filepath.Join("..", "..", "harness"))
	}
	if _, err := os.Stat(filepath.Join(harness, "kagent_harness", "loading.py")); err != nil {
		t.Skipf("no harness at %s: %v", harness, err)
	}
	dir := t.TempDir()
	prob := filepath.Join(dir, "problem.py")
	cand := filepath.Join(dir, "kernel.py")
	os.WriteFile(prob, []byte(gpuProblem), 0o644)
	os.WriteFile(cand, []byte("import torch\n"), 0o644)
	p, err := New(Config{NCUPath: os.Getenv("KAGENT_NCU"), HarnessDir: harness, ProblemPath: prob, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Profile(context.Background(), platform.Candidate{ID: "bad", Path: cand, Source: "import torch\n"})
	t.Logf("error: %v", err)
	if !errors.Is(err, ErrExit) || !strings.Contains(err.Error(), "defines neither class ModelNew") {
		t.Errorf("err = %v", err)
	}
}
