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
	"github.com/kagent-kernels/kagent/roofline"
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
	var s *Session
	prof := &loadedProfiler{s: &s}
	s, cand := addReluSession(t, EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5}, prof)
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

// aheadProfiler records the calls a session makes on a profiler that can
// start early.
type aheadProfiler struct {
	slotEnv   []string
	prestarts int
	closes    int
}

func (p *aheadProfiler) Profile(context.Context, platform.Candidate) (roofline.Metrics, error) {
	return roofline.Metrics{Source: "test", TimeMS: 1}, nil
}
func (p *aheadProfiler) Prestart()    { p.prestarts++ }
func (p *aheadProfiler) Close() error { p.closes++; return nil }

// TestPrepareProfile: PrepareProfile builds every slot's profiler and
// starts it early; a Reopen and the session's Close end the profilers, and
// the next task gets new ones.
func TestPrepareProfile(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	abs, _ := filepath.Abs("testdata/problems/add_relu")
	task := &kerneldir.Task{Dir: abs, ProblemPath: filepath.Join(abs, "problem.py")}
	var made []*aheadProfiler
	s, err := OpenSession(context.Background(), task, SessionConfig{
		Python: py, Device: "cpu", CacheDir: t.TempDir(),
		Slots:  [][]string{{"KAGENT_TEST_SLOT=a"}, {"KAGENT_TEST_SLOT=b"}},
		Env:    []string{"CUDA_VISIBLE_DEVICES="},
		Engine: EngineOptions{VerifyTimeout: 60 * time.Second},
		Profiler: func(ps ProfilerSetup) (platform.Profiler, error) {
			p := &aheadProfiler{slotEnv: ps.SlotEnv}
			made = append(made, p)
			return p, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.PrepareProfile()
	if len(made) != 2 || made[0].prestarts != 1 || made[1].prestarts != 1 ||
		made[0].slotEnv[len(made[0].slotEnv)-1] == made[1].slotEnv[len(made[1].slotEnv)-1] {
		t.Fatalf("after PrepareProfile: %d profilers %+v, want one per slot, each started early", len(made), made)
	}
	// Profile uses the slot's profiler, not a new one.
	if _, err := s.Profile(context.Background(), platform.Candidate{ID: "x", Path: "x.py"}); err != nil {
		t.Fatal(err)
	}
	if len(made) != 2 {
		t.Fatalf("Profile built another profiler (%d)", len(made))
	}
	if err := s.Reopen(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if made[0].closes != 1 || made[1].closes != 1 {
		t.Fatalf("Reopen did not close the profilers: %+v", made)
	}
	s.PrepareProfile()
	if len(made) != 4 {
		t.Fatalf("after Reopen, PrepareProfile made %d profilers in all, want 4", len(made))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if made[2].closes != 1 || made[3].closes != 1 {
		t.Fatalf("Close did not close the profilers: %+v", made[2:])
	}
}

// hangingProfiler stands for a profile whose candidate hangs under the
// profiler: it returns only when its context ends.
type hangingProfiler struct{}

func (hangingProfiler) Profile(ctx context.Context, _ platform.Candidate) (roofline.Metrics, error) {
	<-ctx.Done()
	return roofline.Metrics{}, ctx.Err()
}

// TestProfileLimit: a profile that hangs is stopped at the session's
// profile limit, and the error says which limit and how to set another.
func TestProfileLimit(t *testing.T) {
	s, cand := addReluSession(t, EngineOptions{VerifyTimeout: 60 * time.Second, ProfileTimeout: 300 * time.Millisecond}, hangingProfiler{})
	_, err := s.Profile(context.Background(), platform.Candidate{ID: "hangs", Path: cand})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped after 300ms (timeouts.profile") {
		t.Fatalf("Profile = %v, want the profile stopped at its limit", err)
	}
}

// lastProfiler records whether it was told of the run's last profile.
type lastProfiler struct{ aheadProfiler }

func (p *lastProfiler) Last() { p.prestarts = -1 }

// TestLastProfile: the session passes the run's last profile on to the
// profilers it has built.
func TestLastProfile(t *testing.T) {
	prof := &lastProfiler{}
	s := &Session{profilers: map[int]platform.Profiler{0: prof}}
	s.LastProfile()
	if prof.prestarts != -1 {
		t.Error("the profiler was not told")
	}
}

// addReluSession opens a cpu session on the add_relu problem whose profiler
// is prof (closed when the test ends), and the path of a correct candidate.
func addReluSession(t *testing.T, engine EngineOptions, prof platform.Profiler) (*Session, string) {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	abs, _ := filepath.Abs("testdata/problems/add_relu")
	cand, _ := filepath.Abs("testdata/candidates/cpu/add_relu_ok.py")
	task := &kerneldir.Task{Dir: abs, ProblemPath: filepath.Join(abs, "problem.py")}
	s, err := OpenSession(context.Background(), task, SessionConfig{
		Python: py, Device: "cpu", Isolate: true, CacheDir: t.TempDir(),
		Env:      []string{"TRITON_INTERPRET=1", "CUDA_VISIBLE_DEVICES="},
		Engine:   engine,
		Profiler: func(ProfilerSetup) (platform.Profiler, error) { return prof, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, cand
}
