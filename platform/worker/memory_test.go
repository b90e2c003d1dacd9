package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// memorySession opens a cpu session on the problem file in dir.
func memorySession(t *testing.T, dir string) *Session {
	t.Helper()
	return cpuSession(t, dir, EngineOptions{WarmupMS: 2, RepMS: 5})
}

// cpuSession opens a cpu session with isolated runners on the problem file
// in dir.
func cpuSession(t *testing.T, dir string, eng EngineOptions) *Session {
	t.Helper()
	return cpuSessionWith(t, dir, eng, nil)
}

// cpuSessionWith is cpuSession with its configuration changed by set first
// (nil: as it is).
func cpuSessionWith(t *testing.T, dir string, eng EngineOptions, set func(*SessionConfig)) *Session {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	task := &kerneldir.Task{Dir: dir, ProblemPath: filepath.Join(dir, "problem.py")}
	cfg := SessionConfig{Python: py, Device: "cpu", Isolate: true,
		CacheDir: t.TempDir(), Env: []string{"TRITON_INTERPRET=1", "CUDA_VISIBLE_DEVICES="},
		Engine: eng}
	if set != nil {
		set(&cfg)
	}
	s, err := OpenSession(context.Background(), task, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func cpuCandidate(name string) platform.Candidate {
	p, _ := filepath.Abs(filepath.Join("testdata", "candidates", "cpu", name+".py"))
	return platform.Candidate{ID: name, Path: p}
}

// TestOutOfMemoryRecyclesTheWorker: a candidate that runs out of memory is
// rejected as oom, its worker is replaced, and the next candidate is
// verified on the fresh worker (which loads the problem again).
func TestOutOfMemoryRecyclesTheWorker(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "problems", "add_relu"))
	s := memorySession(t, dir)
	ctx := context.Background()
	if v, err := s.Verify(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("add_relu_ok: %v %+v", err, v)
	}
	old := s.Engine.pool.slots[0].w
	v, err := s.Verify(ctx, cpuCandidate("fault_memory_error"))
	if err != nil {
		t.Fatalf("an out-of-memory candidate must be a verdict, not an error: %v", err)
	}
	if v.Passed || v.Failure != "oom" {
		t.Fatalf("fault_memory_error: want failure oom, got %q: %s", v.Failure, v.Reason)
	}
	if s.Engine.pool.Restarts(0) != 1 || s.Engine.pool.slots[0].w == old {
		t.Fatalf("the worker was not recycled after oom (restarts %d)", s.Engine.pool.Restarts(0))
	}
	if v, err := s.Verify(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("add_relu_ok after the recycle: %v %+v", err, v)
	}
	if _, err := s.Time(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: cpuCandidate("add_relu_ok")}); err != nil {
		t.Fatalf("timing after the recycle: %v", err)
	}
}

// flakyProblem runs out of memory in get_inputs the first time it is
// loaded (a marker file remembers it across processes).
const flakyProblem = `
import os
import torch
import torch.nn as nn

MARKER = %q
ALWAYS = %v

class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)

def get_inputs():
    if ALWAYS or not os.path.exists(MARKER):
        open(MARKER, "w").close()
        raise MemoryError("simulated: the device is full")
    return [torch.randn(64, 128), torch.randn(64, 128)]

def get_init_inputs():
    return []
`

func writeFlaky(t *testing.T, always bool) string {
	t.Helper()
	dir := t.TempDir()
	src := strings.Replace(strings.Replace(flakyProblem, "%q", `"`+filepath.Join(dir, "marker")+`"`, 1), "%v",
		map[bool]string{true: "True", false: "False"}[always], 1)
	if err := os.WriteFile(filepath.Join(dir, "problem.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadOutOfMemoryIsRetriedOnAFreshWorker: memory a worker held must not
// end the run: a load that runs out of memory is tried again on a fresh
// worker; only that one's failure is the problem's.
func TestLoadOutOfMemoryIsRetriedOnAFreshWorker(t *testing.T) {
	s := memorySession(t, writeFlaky(t, false))
	ctx := context.Background()
	if v, err := s.Verify(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("verify after a load that ran out of memory once: %v %+v", err, v)
	}
	if s.Engine.pool.Restarts(0) != 1 {
		t.Errorf("restarts %d, want 1 (the retry on a fresh worker)", s.Engine.pool.Restarts(0))
	}

	s2 := memorySession(t, writeFlaky(t, true))
	_, err := s2.Verify(ctx, cpuCandidate("add_relu_ok"))
	var pe *ProblemError
	if !errors.As(err, &pe) || !isOOM(err) {
		t.Fatalf("a problem that never fits must end as a ProblemError of kind oom, got %v", err)
	}
	if !strings.Contains(err.Error(), "get_inputs raised MemoryError") {
		t.Errorf("the error must name the problem's failing call: %v", err)
	}
}

// TestDerivedLimits: verification and timing limits follow the problem on a
// GPU, are the configured ones when set, and the cap elsewhere.
func TestDerivedLimits(t *testing.T) {
	e := NewEngine(nil, LoadRequest{}, EngineOptions{Representative: true})
	if v, b := e.Limits(); v != LimitCap || b != LimitCap {
		t.Errorf("before any step: %s %s, want the cap", v, b)
	}
	e.note(&e.loadTook, 2*time.Second, true)
	e.note(&e.verifyTook, 3*time.Second, true)
	e.note(&e.verifyTook, time.Minute, true) // only the first passing verification counts
	e.noteBench(time.Second)
	if v, b := e.Limits(); v != LimitFloor+2*time.Second+LimitFactor*3*time.Second || b != LimitFloor+2*time.Second+LimitFactor*time.Second {
		t.Errorf("derived: verify %s, bench %s", v, b)
	}
	e.noteBench(time.Hour)
	if _, b := e.Limits(); b != LimitCap {
		t.Errorf("a long timing must cap at %s, got %s", LimitCap, b)
	}
	set := NewEngine(nil, LoadRequest{}, EngineOptions{Representative: true, VerifyTimeout: 7 * time.Second})
	set.note(&set.verifyTook, time.Second, true)
	if v, _ := set.Limits(); v != 7*time.Second {
		t.Errorf("a configured limit must stay: %s", v)
	}
	cpu := NewEngine(nil, LoadRequest{}, EngineOptions{})
	cpu.note(&cpu.verifyTook, time.Second, true)
	if v, _ := cpu.Limits(); v != LimitCap {
		t.Errorf("the cpu platform keeps the cap: %s", v)
	}
	if p := cpu.ProfileLimit(); p != LimitCap {
		t.Errorf("the cpu platform's profiles keep the cap: %s", p)
	}
	if p := NewEngine(nil, LoadRequest{}, EngineOptions{Representative: true}).ProfileLimit(); p != LimitCap {
		t.Errorf("a profile before any verification: %s, want the cap", p)
	}
	if p := e.ProfileLimit(); p != ProfileFloor+2*time.Second+LimitFactor*3*time.Second {
		t.Errorf("a profile after the first verification: %s", p)
	}
	e.note(&e.loadTook, time.Hour, false)
	if p := e.ProfileLimit(); p != LimitCap {
		t.Errorf("a long load must cap the profile at %s, got %s", LimitCap, p)
	}
	set.opts.ProfileTimeout = 9 * time.Second
	if p := set.ProfileLimit(); p != 9*time.Second {
		t.Errorf("a configured profile limit must stay: %s", p)
	}
}
