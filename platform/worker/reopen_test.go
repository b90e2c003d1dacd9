package worker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// TestReopenBindsWarmWorkersToAnotherProblem: a session reopened on another
// problem keeps its worker process, frees the old problem and verifies
// against the new reference.
func TestReopenBindsWarmWorkersToAnotherProblem(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	task := func(name string) *kerneldir.Task {
		abs, _ := filepath.Abs(filepath.Join("testdata", "problems", name))
		return &kerneldir.Task{Dir: abs, ProblemPath: filepath.Join(abs, "problem.py")}
	}
	cand := func(name string) platform.Candidate {
		p, _ := filepath.Abs(filepath.Join("testdata", "candidates", "cpu", name+".py"))
		return platform.Candidate{ID: name, Path: p}
	}
	ctx := context.Background()
	s, err := OpenSession(ctx, task("add_relu"), SessionConfig{Python: py, Device: "cpu", Isolate: true, CacheDir: t.TempDir(),
		Env:    []string{"TRITON_INTERPRET=1", "CUDA_VISIBLE_DEVICES="},
		Engine: EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	verify := func(c platform.Candidate) platform.Verdict {
		t.Helper()
		v, err := s.Verify(ctx, c)
		if err != nil {
			t.Fatalf("verify %s: %v", c.ID, err)
		}
		return v
	}
	if v := verify(cand("add_relu_ok")); !v.Passed {
		t.Fatalf("add_relu_ok on add_relu: %s: %s", v.Failure, v.Reason)
	}
	before, _ := s.Info(ctx)
	w := s.Engine.pool.slots[0].w

	s.Engine.note(&s.Engine.verifyTook, time.Second, true)
	if err := s.Reopen(ctx, task("row_sum")); err != nil {
		t.Fatal(err)
	}
	if s.Engine.verifyTook != 0 || s.Engine.loadTook != 0 {
		t.Errorf("the derived limits kept the old problem's times (verify %s, load %s)", s.Engine.verifyTook, s.Engine.loadTook)
	}
	if v := verify(cand("row_sum_ok")); !v.Passed {
		t.Fatalf("row_sum_ok after reopening on row_sum: %s: %s", v.Failure, v.Reason)
	}
	if v := verify(cand("add_relu_ok")); v.Passed {
		t.Fatal("add_relu_ok passed against row_sum's reference: the old problem is still bound")
	}
	after, _ := s.Info(ctx)
	if after.ProblemID == before.ProblemID || after.BytesIn == before.BytesIn {
		t.Errorf("problem info not renewed: before %s %.0f B, after %s %.0f B", before.ProblemID, before.BytesIn, after.ProblemID, after.BytesIn)
	}
	if s.Engine.pool.slots[0].w != w || s.Engine.pool.Restarts(0) != 0 {
		t.Errorf("the worker was replaced (restarts %d): reopening must keep it", s.Engine.pool.Restarts(0))
	}
}
