package worker

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGateTakesTheWarmSpare: the acceptance gate verifies in the slot's warm
// spare (a process that served no request) when one is ready, the slot
// starts another, and a gate with no spare ready starts its own worker; both
// verdicts come from the new seeds, and a wrong kernel still fails.
func TestGateTakesTheWarmSpare(t *testing.T) {
	abs, _ := filepath.Abs(filepath.Join("testdata", "problems", "add_relu"))
	ctx := context.Background()
	s := cpuSessionWith(t, abs, EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5},
		func(c *SessionConfig) { c.Spare = true })
	sl := s.Engine.pool.slots[0]
	spare := func() *Worker {
		sl.spareMu.Lock()
		defer sl.spareMu.Unlock()
		return sl.spareW
	}
	waitSpare := func() *Worker {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if w := spare(); w != nil {
				return w
			}
		}
		t.Fatal("the slot's spare never got ready")
		return nil
	}
	if v, err := s.Verify(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("warm verification: %v %+v", err, v)
	}
	served := sl.served

	first := waitSpare()
	v, err := s.Accept(ctx, cpuCandidate("add_relu_ok"))
	if err != nil || !v.Passed {
		t.Fatalf("gate in the spare: %v %+v", err, v)
	}
	if first.Alive() {
		t.Error("the spare the gate took is still running: the gate did not use it, or did not close it")
	}
	second := waitSpare()
	if second == first {
		t.Error("the slot kept the spare the gate took")
	}
	if sl.served != served+1 || sl.w.PID() == first.PID() {
		t.Errorf("the slot's own worker changed or was not the one leased (served %d → %d)", served, sl.served)
	}

	// No spare ready: the gate starts a worker of its own, and a wrong
	// kernel fails it.
	if w := sl.takeSpare(); w != nil {
		_ = w.Close()
	}
	v, err = s.Accept(ctx, cpuCandidate("wrong_values"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Passed {
		t.Error("a wrong kernel passed the gate")
	}
	if v, err := s.Accept(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("gate in a new worker: %v %+v", err, v)
	}
}

// TestGateRefusedForMemoryFreesTheWorker: a gate whose fresh worker cannot
// load the problem for want of device memory (the warm worker's copy and
// kept runners may hold it) frees the warm worker's problem and tries once
// more; only a second refusal is an error, and it says it is memory.
func TestGateRefusedForMemoryFreesTheWorker(t *testing.T) {
	abs, _ := filepath.Abs(filepath.Join("testdata", "problems", "add_relu"))
	ctx := context.Background()
	s := cpuSessionWith(t, abs, EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5}, nil)
	if v, err := s.Verify(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("warm verification: %v %+v", err, v)
	}
	if s.gateNeedsRoom() {
		t.Fatal("this small problem should not need the warm worker's memory freed before the gate")
	}
	sl := s.Engine.pool.slots[0]
	env := sl.opts.Env
	sl.opts.Env = append(slices.Clone(env), "KAGENT_MEMORY_LIMIT=1M") // every gate worker is refused
	_, err := s.Accept(ctx, cpuCandidate("add_relu_ok"))
	if !isOOM(err) || !strings.Contains(err.Error(), "the problem needs about") {
		t.Fatalf("gate refused twice: %v, want the load's oom error", err)
	}
	s.Engine.mu.Lock()
	loaded := len(s.Engine.loaded)
	s.Engine.mu.Unlock()
	if loaded != 0 {
		t.Error("the warm worker kept its problem after the gate's load was refused for memory")
	}
	sl.opts.Env = env
	if v, err := s.Accept(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("gate with memory: %v %+v", err, v)
	}
	if v, err := s.Verify(ctx, cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("the warm worker loads the problem again: %v %+v", err, v)
	}
}
