package worker

import (
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

// TestBenchRequestBudget: a target's budget replaces the session's timing
// budget in the bench request; without one the session's is used.
func TestBenchRequestBudget(t *testing.T) {
	e := &Engine{opts: EngineOptions{WarmupMS: 25, RepMS: 100}}
	tests := []struct {
		name        string
		budget      *platform.Budget
		warmup, rep float64
		minReps     int
	}{
		{name: "full", warmup: 25, rep: 100, minReps: 10},
		{name: "screen", budget: &platform.Budget{Name: "screen 11.1%", WarmupMS: 2.5, RepMS: 11, MinReps: 3}, warmup: 2.5, rep: 11, minReps: 3},
		{name: "screen keeps min reps", budget: &platform.Budget{Name: "screen 50%", WarmupMS: 12.5, RepMS: 50}, warmup: 12.5, rep: 50, minReps: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.benchRequest("p", platform.Target{Kind: platform.TargetKernel, Budget: tt.budget})
			if r.WarmupMS != tt.warmup || r.RepMS != tt.rep || r.MinReps != tt.minReps {
				t.Errorf("request warmup %g rep %g min reps %d, want %g %g %d", r.WarmupMS, r.RepMS, r.MinReps, tt.warmup, tt.rep, tt.minReps)
			}
		})
	}
}
