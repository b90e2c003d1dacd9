package worker

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// TestQuickCutReachesTheHarness: a candidate's cutoff goes to the worker's
// verification (a cutoff no call can beat cuts it as slower, one every call
// beats lets it be verified in full, after the quick timing), and the
// acceptance gate verifies in full whatever cutoff it is handed.
func TestQuickCutReachesTheHarness(t *testing.T) {
	abs, _ := filepath.Abs(filepath.Join("testdata", "problems", "add_relu"))
	ctx := context.Background()
	s := cpuSession(t, abs, EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5})
	c := cpuCandidate("add_relu_ok")
	c.CutoffMS = 1e-9
	v, err := s.Verify(ctx, c)
	if err != nil || v.Passed || v.Failure != platform.FailureSlower {
		t.Fatalf("cutoff %g ms: %v %+v", c.CutoffMS, err, v)
	}
	c.CutoffMS = 1e9
	if v, err = s.Verify(ctx, c); err != nil || !v.Passed {
		t.Fatalf("cutoff %g ms: %v %+v", c.CutoffMS, err, v)
	}
	if _, ok := v.Phases["quick_timing"]; !ok || v.QuickMS <= 0 {
		t.Errorf("no quick timing among the phases %v (quick_ms %g)", v.Phases, v.QuickMS)
	}
	c.CutoffMS = 1e-9
	if v, err = s.Accept(ctx, c); err != nil || !v.Passed {
		t.Fatalf("the gate with cutoff %g ms: %v %+v", c.CutoffMS, err, v)
	}
}
