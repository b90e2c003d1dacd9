package worker

import (
	"context"
	"path/filepath"
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
