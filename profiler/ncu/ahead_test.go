package ncu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/proc/proctest"
	"github.com/kagent-kernels/kagent/platform"
)

// aheadProblem and aheadCandidate run on a CPU torch; the candidate's
// kernel is named axpy, as in the CSV sample the fake ncu reports.
const aheadProblem = `
import torch

class Model(torch.nn.Module):
    def forward(self, x, y):
        return 2.0 * x + y

def get_inputs():
    return [torch.randn(64), torch.randn(64)]

def get_init_inputs():
    return []
`

const aheadCandidate = `
def jit(fn):
    return fn

@jit
def axpy(x, y):
    return 2.0 * x + y

def kernel_function(x, y):
    return axpy(x, y)
`

// aheadShim runs the wrapper as the profiled program: it stands in for
// NVTX and the CUDA profiler, and leaves started-PID when it starts and
// ran-PID when the wrapper finished. With SHIM_FAIL_AHEAD set, a wrapper
// started ahead fails once it has its job; with SHIM_DIE_AHEAD, before.
const aheadShim = `
import os
import runpy
import sys

import torch

d = os.environ["SHIM_DIR"]
open(os.path.join(d, "started-%d" % os.getpid()), "w").close()

def noop(*args):
    pass

def fail(*args):
    raise RuntimeError("cudaProfilerStart failed")

torch.cuda.nvtx.range_push = noop
torch.cuda.nvtx.range_pop = noop
torch.cuda.profiler.start = noop
torch.cuda.profiler.stop = noop
if os.environ.get("SHIM_FAIL_AHEAD") and "kagent-ncu-ahead-" in sys.argv[1]:
    torch.cuda.profiler.start = fail
if os.environ.get("SHIM_DIE_AHEAD") and "kagent-ncu-ahead-" in sys.argv[1]:
    print("ImportError: no harness here", file=sys.stderr)
    sys.exit(5)
runpy.run_path(sys.argv[1], run_name="__main__")
open(os.path.join(d, "ran-%d" % os.getpid()), "w").close()
`

// aheadTimeout bounds one profile of these tests: a guard against a hang
// that a test never waits for (on a loaded machine torch's import alone
// can take minutes).
const aheadTimeout = 10 * time.Minute

type aheadFixture struct {
	p    *Profiler
	shim string // the SHIM_DIR
	work string
	cand platform.Candidate
}

func newAheadFixture(t *testing.T, idle int, env ...string) *aheadFixture {
	t.Helper()
	harness, py := repoHarness(t)
	dir := t.TempDir()
	f := &aheadFixture{shim: filepath.Join(dir, "shim"), work: filepath.Join(dir, "work")}
	for _, d := range []string{f.shim, f.work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"problem.py": aheadProblem, "cand.py": aheadCandidate, "shim.py": aheadShim,
		"python": "#!/bin/sh\nexec \"$SHIM_PYTHON\" \"$SHIM_PY\" \"$@\"\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env = append(env, "FAKE_NCU_MODE=exec", "FAKE_NCU_CSV="+sample(t, "raw_disable_extra_suffixes_via_log_file.csv"),
		"FAKE_NCU_ARGS="+filepath.Join(dir, "args"), "SHIM_PYTHON="+py, "SHIM_PY="+filepath.Join(dir, "shim.py"),
		"SHIM_DIR="+f.shim, "KAGENT_DEVICE=cpu")
	var err error
	f.p, err = New(Config{NCUPath: fakeNCU(t), Python: filepath.Join(dir, "python"), HarnessDir: harness,
		ProblemPath: filepath.Join(dir, "problem.py"), DType: "fp32", Device: "cpu", WorkDir: f.work,
		Metrics: []string{MetricTime}, Ahead: true, IdleSeconds: idle, Env: env, Timeout: aheadTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.p.Close() })
	f.cand = platform.Candidate{ID: "c1", Path: filepath.Join(dir, "cand.py"), Source: aheadCandidate}
	return f
}

// pids lists the programs that left a file with this prefix.
func (f *aheadFixture) pids(t *testing.T, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(f.shim)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if pid, ok := strings.CutPrefix(e.Name(), prefix+"-"); ok {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// waitStarted waits until n programs have started (bounded by
// proctest.Patience, a guard for a stuck test, not a timing assertion).
func (f *aheadFixture) waitStarted(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	proctest.Wait(t, fmt.Sprintf("fewer than %d programs started", n), func() bool {
		got = f.pids(t, "started")
		return len(got) >= n
	})
	return got
}

// waitAheadEnded waits until the profiler has seen its process started
// ahead end: the moment its next profile decides what that end means.
// That the program's own process is gone is not enough: ncu, and the
// profiler's reaper after it, see the end later (on a loaded machine, much
// later).
func (f *aheadFixture) waitAheadEnded(t *testing.T, stuck string) {
	t.Helper()
	f.p.mu.Lock()
	a := f.p.ahead
	f.p.mu.Unlock()
	if a == nil {
		t.Fatal("no process was started ahead")
	}
	proctest.Await(t, a.run.done, stuck)
}

func (f *aheadFixture) profile(t *testing.T) {
	t.Helper()
	m, err := f.p.Profile(context.Background(), f.cand)
	if err != nil {
		t.Fatal(err)
	}
	if m.TimeMS <= 0 || len(m.Kernels) != 1 || m.Kernels[0] != "axpy" {
		t.Fatalf("metrics %+v: want the sample's axpy launches", m)
	}
}

// waitGone waits until the process has ended (bounded by
// proctest.Patience, a guard for a stuck test, not a timing assertion).
func waitGone(t *testing.T, pid, stuck string) {
	t.Helper()
	proctest.Wait(t, stuck, func() bool { return !alive(pid) })
}

// repoHarness is the repository's harness directory, and the Python with
// torch that runs it (the test is skipped without one).
func repoHarness(t *testing.T) (dir, python string) {
	t.Helper()
	python = os.Getenv("KAGENT_PYTHON")
	if python == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "harness"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, python
}

// alive reports whether the process a program's file names still runs.
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	return err == nil && !proctest.Gone(n)
}

// A profile uses the process started ahead (which got no kernel filter),
// the next one is started right after, and Close ends it and its files.
func TestProfileUsesTheProcessStartedAhead(t *testing.T) {
	f := newAheadFixture(t, 0)
	f.p.Prestart()
	first := f.waitStarted(t, 1)
	f.profile(t)
	if ran := f.pids(t, "ran"); !slices.Equal(ran, first) {
		t.Fatalf("ran %v, want the process started ahead %v", ran, first)
	}
	both := f.waitStarted(t, 2)
	next := slices.DeleteFunc(slices.Clone(both), func(p string) bool { return p == first[0] })
	args, err := os.ReadFile(filepath.Join(filepath.Dir(f.shim), "args"))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(strings.Split(string(args), "\n"), "-k") {
		t.Errorf("a process started ahead got a kernel filter:\n%s", args)
	}
	if !alive(next[0]) {
		t.Fatalf("the next process %s is not waiting", next[0])
	}
	f.p.Close()
	// The group has been sent SIGKILL; its death is not instantaneous.
	waitGone(t, next[0], "the process started ahead still runs after Close")
	if left, _ := filepath.Glob(filepath.Join(f.work, "kagent-ncu-ahead-*")); len(left) > 0 {
		t.Errorf("Close left %v", left)
	}
	// Prestart starts its process before it returns, or not at all.
	f.p.Prestart()
	f.p.mu.Lock()
	a := f.p.ahead
	f.p.mu.Unlock()
	if a != nil {
		t.Error("Prestart started a process after Close")
	}
}

// A profile that fails in the process started ahead runs again in a fresh
// one, with ncu's kernel filter, and the profiler starts no more ahead.
func TestProfileAheadFailureFallsBack(t *testing.T) {
	f := newAheadFixture(t, 0, "SHIM_FAIL_AHEAD=1")
	f.p.Prestart()
	first := f.waitStarted(t, 1)
	f.profile(t)
	ran := f.pids(t, "ran")
	if len(ran) != 1 || ran[0] == first[0] {
		t.Fatalf("ran %v: want one fresh process, not %v", ran, first)
	}
	args, err := os.ReadFile(filepath.Join(filepath.Dir(f.shim), "args"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(args), "\n-k\nregex:") {
		t.Errorf("the fresh run had no kernel filter:\n%s", args)
	}
	f.p.mu.Lock()
	noAhead, a := f.p.noAhead, f.p.ahead
	f.p.mu.Unlock()
	if !strings.Contains(noAhead, "cudaProfilerStart failed") || a != nil {
		t.Errorf("noAhead %q, ahead %v: starting ahead should be off, with the reason", noAhead, a)
	}
}

// A process that waited in vain (IdleSeconds) is not a failure: the
// profile runs fresh and the next one is started ahead again.
func TestProfileAheadIdleExpiry(t *testing.T) {
	f := newAheadFixture(t, 1)
	f.p.Prestart()
	first := f.waitStarted(t, 1)
	f.waitAheadEnded(t, "the process started ahead did not give up waiting")
	f.profile(t)
	if ran := f.pids(t, "ran"); len(ran) != 1 || ran[0] == first[0] {
		t.Fatalf("ran %v: want one fresh process", ran)
	}
	f.p.mu.Lock()
	noAhead := f.p.noAhead
	f.p.mu.Unlock()
	if noAhead != "" {
		t.Errorf("an idle expiry turned starting ahead off: %s", noAhead)
	}
	f.waitStarted(t, 3)
}

// Without Prestart (kagent profile: one profile, then the end), a profile
// runs fresh and leaves no process behind.
func TestProfileWithoutPrestartStartsNothingAhead(t *testing.T) {
	f := newAheadFixture(t, 0)
	f.profile(t)
	if started, ran := f.pids(t, "started"), f.pids(t, "ran"); len(started) != 1 || !slices.Equal(started, ran) {
		t.Fatalf("started %v, ran %v: want one fresh process", started, ran)
	}
	f.p.mu.Lock()
	a := f.p.ahead
	f.p.mu.Unlock()
	if a != nil {
		t.Error("a process was started ahead without Prestart")
	}
}

// A process started ahead that dies before its job (not waiting in vain)
// turns starting ahead off; the profile runs fresh.
func TestProfileAheadDiedEarly(t *testing.T) {
	f := newAheadFixture(t, 0, "SHIM_DIE_AHEAD=1")
	f.p.Prestart()
	f.waitStarted(t, 1)
	f.waitAheadEnded(t, "the process started ahead did not die")
	f.profile(t)
	f.p.mu.Lock()
	noAhead, a := f.p.noAhead, f.p.ahead
	f.p.mu.Unlock()
	if !strings.Contains(noAhead, "ended before its job") || a != nil {
		t.Errorf("noAhead %q, ahead %v: starting ahead should be off", noAhead, a)
	}
}

// After Last, the profile still uses the process started ahead, and no
// process is started for a next profile.
func TestLastProfileStartsNothingAhead(t *testing.T) {
	f := newAheadFixture(t, 0)
	f.p.Prestart()
	first := f.waitStarted(t, 1)
	f.p.Last()
	f.profile(t)
	if ran := f.pids(t, "ran"); !slices.Equal(ran, first) {
		t.Fatalf("ran %v, want the process started ahead %v", ran, first)
	}
	f.p.mu.Lock()
	a := f.p.ahead
	f.p.mu.Unlock()
	if a != nil {
		t.Error("a process was started ahead after the last profile")
	}
}

// stageCandidate leaves called-PID-N in SHIM_DIR at its N-th call.
const stageCandidate = `
import os

_calls = [0]

def kernel_function(x, y):
    _calls[0] += 1
    open(os.path.join(os.environ["SHIM_DIR"], "called-%d-%d" % (os.getpid(), _calls[0])), "w").close()
    return axpy(x, y)

def axpy(x, y):
    return 2.0 * x + y
`

// stagedCandidate writes stageCandidate next to the fixture's candidate as
// name and returns it.
func (f *aheadFixture) stagedCandidate(t *testing.T, id, name string) platform.Candidate {
	t.Helper()
	path := filepath.Join(filepath.Dir(f.cand.Path), name)
	if err := os.WriteFile(path, []byte(stageCandidate), 0o644); err != nil {
		t.Fatal(err)
	}
	return platform.Candidate{ID: id, Path: path, Source: stageCandidate}
}

// A staged profile warms its candidate up before Profile is called; the
// profile then runs only the profiled call, in that same process.
func TestStagedProfileWarmsUpAhead(t *testing.T) {
	f := newAheadFixture(t, 0)
	f.p.Prestart()
	first := f.waitStarted(t, 1)
	c := f.stagedCandidate(t, "c1", "staged.py")
	if !f.p.Stage(c) || !f.p.Stage(c) {
		t.Fatal("Stage refused")
	}
	// The default warm-up is 3 calls, all before the profile is asked for.
	warm := "called-" + first[0] + "-3"
	proctest.Wait(t, "the staged process did not warm its candidate up", func() bool {
		_, err := os.Stat(filepath.Join(f.shim, warm))
		return err == nil
	})
	if ran := f.pids(t, "ran"); len(ran) != 0 {
		t.Fatalf("the staged process finished before its profile: %v", ran)
	}
	if _, err := os.Stat(filepath.Join(f.shim, "called-"+first[0]+"-4")); err == nil {
		t.Fatal("the profiled call ran before the profile was asked for")
	}
	m, err := f.p.Profile(context.Background(), c)
	if err != nil || m.TimeMS <= 0 {
		t.Fatalf("Profile = %+v, %v", m, err)
	}
	if ran := f.pids(t, "ran"); !slices.Equal(ran, first) {
		t.Fatalf("ran %v, want the staged process %v", ran, first)
	}
	if _, err := os.Stat(filepath.Join(f.shim, "called-"+first[0]+"-4")); err != nil {
		t.Error("the staged process did not run the profiled call")
	}
	if _, err := os.Stat(filepath.Join(f.shim, "called-"+first[0]+"-5")); err == nil {
		t.Error("the staged process warmed up again after its go")
	}
}

// A light stage hands the job over with only the device context to make
// before the go: the profile then builds the inputs, warms the candidate up
// and runs the profiled call, all in the staged process.
func TestLightStagedProfile(t *testing.T) {
	f := newAheadFixture(t, 0)
	var log bytes.Buffer
	f.p.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	f.p.Prestart()
	first := f.waitStarted(t, 1)
	c := f.stagedCandidate(t, "c1", "staged.py")
	if !f.p.StageLight(c) || !f.p.StageLight(c) {
		t.Fatal("StageLight refused")
	}
	f.p.mu.Lock()
	a := f.p.ahead
	f.p.mu.Unlock()
	data, err := os.ReadFile(a.job)
	if err != nil {
		t.Fatal(err)
	}
	var j job
	if err := json.Unmarshal(data, &j); err != nil || !j.Light || j.GoFile == "" {
		t.Fatalf("job %s (%v): want a light job with a go file", data, err)
	}
	m, err := f.p.Profile(context.Background(), c)
	if err != nil || m.TimeMS <= 0 {
		t.Fatalf("Profile = %+v, %v", m, err)
	}
	if ran := f.pids(t, "ran"); !slices.Equal(ran, first) {
		t.Fatalf("ran %v, want the staged process %v", ran, first)
	}
	for n, want := range map[int]bool{1: true, 4: true, 5: false} {
		_, err := os.Stat(filepath.Join(f.shim, fmt.Sprintf("called-%s-%d", first[0], n)))
		if (err == nil) != want {
			t.Errorf("call %d ran: %v, want %v (3 warm-up calls and the profiled one)", n, err == nil, want)
		}
	}
	if !strings.Contains(log.String(), "(light)") {
		t.Errorf("the profile's phases do not say the stage was light: %s", log.String())
	}
	if !regexp.MustCompile(`device [0-9.]+ s: init [0-9.]+ s, context [0-9.]+ s, began at [0-9]{10}\.[0-9]{3}; problem`).MatchString(log.String()) {
		t.Errorf("the profile's phases do not split the device's part: %s", log.String())
	}
	// A full stage of the same candidate is another job: the light one ends.
	f.waitStarted(t, 2)
	if !f.p.StageLight(c) || !f.p.Stage(c) {
		t.Fatal("Stage refused")
	}
	f.p.mu.Lock()
	staged := f.p.ahead.staged
	f.p.mu.Unlock()
	if staged != stageKey(c, false) {
		t.Errorf("staged %q, want the full stage %q", staged, stageKey(c, false))
	}
}

// A profile of another candidate ends the staged process and runs on its
// own; Unstage ends a staged process; neither turns starting ahead off.
func TestStagedProfileOfAnotherCandidate(t *testing.T) {
	f := newAheadFixture(t, 0)
	f.p.Prestart()
	first := f.waitStarted(t, 1)
	c := f.stagedCandidate(t, "c1", "staged.py")
	if !f.p.Stage(c) {
		t.Fatal("Stage refused")
	}
	f.profile(t) // the fixture's own candidate, c1 of another source
	waitGone(t, first[0], "the process staged for another candidate still runs")
	if ran := f.pids(t, "ran"); len(ran) != 1 || ran[0] == first[0] {
		t.Fatalf("ran %v: want one process that was not staged for another candidate", ran)
	}
	f.p.mu.Lock()
	noAhead := f.p.noAhead
	f.p.mu.Unlock()
	if noAhead != "" {
		t.Fatalf("dropping a staged profile turned starting ahead off: %s", noAhead)
	}
	// Stage again (the next process started ahead takes the job), then Unstage.
	if !f.p.Stage(c) {
		t.Fatal("Stage refused")
	}
	f.p.mu.Lock()
	a := f.p.ahead
	f.p.mu.Unlock()
	f.p.Unstage()
	proctest.Await(t, a.run.done, "Unstage left the staged process running")
	f.p.mu.Lock()
	left := f.p.ahead
	f.p.mu.Unlock()
	if left != nil {
		t.Error("Unstage left a process to profile with")
	}
}

// Without starting ahead, nothing is staged.
func TestStageNeedsAhead(t *testing.T) {
	f := newAheadFixture(t, 0)
	f.p.cfg.Ahead = false
	if f.p.Stage(f.cand) {
		t.Fatal("Stage staged a profile with starting ahead off")
	}
}

// goCandidate creates its staged process's go file at import, to have its
// profiled call run at once (beside its own acceptance gate).
const goCandidate = `
import os
import sys

open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "go"), "w").close()

def kernel_function(x, y):
    return axpy(x, y)

def axpy(x, y):
    return 2.0 * x + y
`

// A candidate that gives itself the go only starts its own profiled call
// early: its profile still comes back whole, from that process or a fresh one.
func TestStagedCandidateThatGoesEarly(t *testing.T) {
	f := newAheadFixture(t, 0)
	f.p.Prestart()
	f.waitStarted(t, 1)
	path := filepath.Join(filepath.Dir(f.cand.Path), "early.py")
	if err := os.WriteFile(path, []byte(goCandidate), 0o644); err != nil {
		t.Fatal(err)
	}
	c := platform.Candidate{ID: "c1", Path: path, Source: goCandidate}
	if !f.p.Stage(c) {
		t.Fatal("Stage refused")
	}
	f.waitAheadEnded(t, "the staged process did not run its profiled call on its own go")
	m, err := f.p.Profile(context.Background(), c)
	if err != nil || m.TimeMS <= 0 || len(m.Kernels) != 1 || m.Kernels[0] != "axpy" {
		t.Fatalf("Profile = %+v, %v; want the sample's axpy launches", m, err)
	}
}
