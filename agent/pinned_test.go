package agent

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/kerneldir"
)

// TestResumeChecksProblem: a run records the hashes of its problem.py and
// test.py; resuming with either changed (or test.py added or removed) is
// refused as not resumable, naming the file; the same files pass, and so
// does a run recorded before hashes were kept.
func TestResumeChecksProblem(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	task := &kerneldir.Task{ProblemSHA256: kerneldir.Sum([]byte("a")), TestSHA256: kerneldir.Sum([]byte("t"))}
	run, err := st.CreateRun(ctx, store.Run{KernelDir: "/k", Problem: "k", Strategy: "greedy", Platform: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{pipeline: &pipeline{in: RunInput{Task: task}, st: st, runID: run.ID}}
	if err := l.checkProblem(ctx); err != nil {
		t.Fatalf("a run with no record: %v", err)
	}
	if err := l.recordProblem(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.checkProblem(ctx); err != nil {
		t.Fatalf("same files: %v", err)
	}
	for _, tc := range []struct {
		name          string
		problem, test string
		file          string
	}{
		{"problem changed", "b", "t", "problem.py"},
		{"test changed", "a", "u", "test.py"},
		{"test removed", "a", "", "test.py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := &kerneldir.Task{ProblemSHA256: kerneldir.Sum([]byte(tc.problem))}
			if tc.test != "" {
				now.TestSHA256 = kerneldir.Sum([]byte(tc.test))
			}
			l := &loop{pipeline: &pipeline{in: RunInput{Task: now}, st: st, runID: run.ID}}
			err := l.checkProblem(ctx)
			if !errors.Is(err, ErrNotResumable) || !strings.Contains(err.Error(), tc.file+" changed since the run started") {
				t.Errorf("checkProblem = %v", err)
			}
		})
	}
}
