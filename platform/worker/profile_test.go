package worker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kagent-dev/kagent/agent/kerneldir"
	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/roofline"
)

// loadedProfiler records whether the session's worker still held the
// problem when the profiler ran.
type loadedProfiler struct {
	s    **Session
	held []bool
}

func (p *loadedProfiler) Profile(context.Context, platform.Candidate) (roofline.Metrics, error) {
	e := (*p.s).Engine
	e.mu.Lock()
	p.held = append(p.held, len(e.loaded) > 0)
	e.mu.Unlock()
	return roofline.Metrics{Source: "test", TimeMS: 1}, nil
}

// TestProfileFreesTheWorkerWhenTight: the worker's copy of the problem is
// freed before profiling only when both copies may not fit on the device,
// and the next verification loads it again.
func TestProfileFreesTheWorkerWhenTight(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	abs, _ := filepath.Abs("testdata/problems/add_relu")
	cand, _ := filepath.Abs("testdata/candidates/cpu/add_relu_ok.py")
	task := &kerneldir.Task{Dir: abs, ProblemPath: filepath.Join(abs, "problem.py")}
	var s *Session
	prof := &loadedProfiler{s: &s}
	s, err := OpenSession(context.Background(), task, SessionConfig{
		Python: py, Device: "cpu", Isolate: true, CacheDir: t.TempDir(),
		Env:      []string{"TRITON_INTERPRET=1", "CUDA_VISIBLE_DEVICES="},
		Engine:   EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5},
		Profiler: func(ProfilerSetup) (platform.Profiler, error) { return prof, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := platform.Candidate{ID: "ok", Path: cand}
	verify := func() {
		if v, err := s.Verify(context.Background(), c); err != nil || !v.Passed {
			t.Fatalf("verify: %+v %v", v, err)
		}
	}
	verify()
	if _, err := s.Profile(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	s.Hello.Device.TotalMemory = 1024 // a device too small for two copies
	if _, err := s.Profile(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if len(prof.held) != 2 || !prof.held[0] || prof.held[1] {
		t.Fatalf("worker held the problem during the profiles: %v, want [true false]", prof.held)
	}
	verify() // loads the problem again
}
