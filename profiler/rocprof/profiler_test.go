package rocprof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kagent-kernels/kagent/internal/proc/proctest"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/profiler/synthetic"
	"github.com/kagent-kernels/kagent/roofline"
)

// These tests run real subprocesses: the fake rocprofv3 executables under
// testdata/bin (shell scripts around testdata/fake_rocprofv3.py), which run
// testdata/wrapper.py as the real tool runs the rendered wrapper.

// passTimeout is the tests' pass timeout. It passes only on a fake clock,
// when a test advances it: no pass times out because the machine is busy.
const passTimeout = 2 * time.Second

// fakeBin is the absolute path of one of the fake rocprofv3 executables.
func fakeBin(t *testing.T, kind string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "bin", kind, "rocprofv3"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// env is one test's scratch files.
type env struct {
	dir         string // the wrapper's working directory
	invocations string // FAKE_ROCPROF_LOG: one line per rocprofv3 run
	wrapperLog  string // KAGENT_TEST_WRAPPER_LOG: one line per wrapper run
	pids        string // FAKE_ROCPROF_PIDS: the hanging fake's pids
}

func newEnv(t *testing.T) env {
	d := t.TempDir()
	return env{dir: filepath.Join(d, "cwd"), invocations: filepath.Join(d, "invocations"),
		wrapperLog: filepath.Join(d, "wrapper.log"), pids: filepath.Join(d, "pids")}
}

func (e env) lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// rmsnormWork is the testdata program's problem: x of 256x1048576 fp32, one output.
var rmsnormWork = synthetic.Work{
	Inputs:  []synthetic.Tensor{{Shape: []int64{256, 1 << 20}, DType: "torch.float32"}},
	Outputs: []synthetic.Tensor{{Shape: []int64{256, 1 << 20}, DType: "torch.float32"}},
}

func (e env) request(t *testing.T, extraEnv ...string) Request {
	t.Helper()
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "wrapper.py"))
	if err != nil {
		t.Fatal(err)
	}
	return Request{
		ID: "r1c2",
		Wrapper: Wrapper{
			Python: "python3", Script: script, Args: []string{"--seed", "7", "two words"}, Dir: e.dir,
			Env: append([]string{"FAKE_ROCPROF_LOG=" + e.invocations, "FAKE_ROCPROF_PIDS=" + e.pids,
				"KAGENT_TEST_WRAPPER_LOG=" + e.wrapperLog, "KAGENT_TEST_WRAPPER_ENV=hello"}, extraEnv...),
		},
		Filter:    Filter{Names: []string{"rmsnorm_stats", "rmsnorm_apply"}},
		Window:    Window{Last: 2},
		DType:     "fp32",
		Synthetic: SyntheticInput{Work: rmsnormWork, TimeMS: 1.25},
	}
}

func newProfiler(t *testing.T, kind string, mod ...func(*Config)) *Profiler {
	t.Helper()
	cfg := Config{BinPath: fakeBin(t, kind), Specs: mi300x, PassTimeout: passTimeout,
		KillGrace: 300 * time.Millisecond, WorkDir: t.TempDir(), After: proctest.NewClock().After}
	for _, m := range mod {
		m(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantSynthetic is the fallback for rmsnormWork at timeMS with reason.
func wantSynthetic(t *testing.T, timeMS float64, reason string) roofline.Metrics {
	t.Helper()
	m, err := synthetic.Metrics(rmsnormWork, timeMS, reason)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProfileWorks: the fake behaves; five passes, each its own run of
// the wrapper with its arguments, environment and directory; the metrics
// are those of the testdata program's profiled call.
func TestProfileWorks(t *testing.T) {
	e := newEnv(t)
	p := newProfiler(t, "ok")
	m, err := p.Run(context.Background(), e.request(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantTestdataMetrics(), m, approx); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	wantRuns := []string{
		"trace",
		"SQ_WAVES SQ_INSTS_VALU SQ_INSTS_SALU SQ_INSTS_VMEM_RD SQ_INSTS_VMEM_WR SQ_INSTS_LDS SQ_INSTS_VALU_MFMA_MOPS_F32",
		"TCC_HIT_sum TCC_MISS_sum TCC_EA0_RDREQ_sum TCC_EA0_WRREQ_sum",
		"FETCH_SIZE",
		"WRITE_SIZE",
	}
	if diff := cmp.Diff(wantRuns, e.lines(t, e.invocations)); diff != "" {
		t.Errorf("rocprofv3 runs (-want +got):\n%s", diff)
	}
	runs := e.lines(t, e.wrapperLog)
	if len(runs) != 5 {
		t.Fatalf("the wrapper ran %d times, want 5", len(runs))
	}
	for _, line := range runs {
		var got struct {
			Argv []string `json:"argv"`
			Cwd  string   `json:"cwd"`
			Env  string   `json:"env"`
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"--seed", "7", "two words"}, got.Argv); diff != "" || got.Env != "hello" {
			t.Errorf("wrapper argv (-want +got):\n%s env %q", diff, got.Env)
		}
		if want, _ := filepath.EvalSymlinks(e.dir); got.Cwd != want && got.Cwd != e.dir {
			t.Errorf("wrapper ran in %s, want %s", got.Cwd, e.dir)
		}
	}
	if p.Fallback() != "" {
		t.Errorf("fallback %q after a good profile", p.Fallback())
	}
	// The output directories are removed.
	if left, _ := os.ReadDir(p.cfg.WorkDir); len(left) != 0 {
		t.Errorf("work dir not cleaned: %v", left)
	}
}

// runAsync starts p.Run and returns a channel closed when it has returned,
// with its results.
func runAsync(ctx context.Context, p *Profiler, req Request) (done <-chan struct{}, m *roofline.Metrics, err *error) {
	ch := make(chan struct{})
	m, err = new(roofline.Metrics), new(error)
	go func() {
		defer close(ch)
		*m, *err = p.Run(ctx, req)
	}()
	return ch, m, err
}

// TestProfileHangFallsBack: the FETCH_SIZE pass hangs (the fake ignores
// SIGTERM, and so does its child); the pass is killed at its timeout, the
// profile falls back to synthetic metrics naming the pass, no process of
// its group is left, and the next profile does not start rocprofv3.
func TestProfileHangFallsBack(t *testing.T) {
	e := newEnv(t)
	clock := proctest.NewClock()
	p := newProfiler(t, "hang_fetch", func(c *Config) { c.After = clock.After })
	done, got, err := runAsync(context.Background(), p, e.request(t))
	// The fake writes its pids once it hangs; then the timeout passes.
	proctest.WaitLine(t, e.pids)
	clock.Advance(passTimeout)
	proctest.Await(t, done, "the profile still waits after the FETCH_SIZE pass's timeout: the hang was not cut")
	if *err != nil {
		t.Fatal(*err)
	}
	reason := "rocprofv3 FETCH_SIZE pass timed out after 2s and was killed"
	if diff := cmp.Diff(wantSynthetic(t, 1.25, reason), *got, approx); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	assertGroupGone(t, e.pids)

	runs := len(e.lines(t, e.invocations))
	if runs != 4 {
		t.Errorf("%d rocprofv3 runs before the fallback, want 4", runs)
	}
	// Sticky: the next profile goes straight to the synthetic roofline.
	req := e.request(t)
	req.Synthetic.TimeMS = 2.5
	m2, err2 := p.Run(context.Background(), req)
	if err2 != nil {
		t.Fatal(err2)
	}
	if got := len(e.lines(t, e.invocations)); got != runs {
		t.Errorf("the second profile ran rocprofv3 %d more times", got-runs)
	}
	if m2.Source != synthetic.Source || m2.TimeMS != 2.5 || !strings.Contains(m2.Fallback, reason) ||
		!strings.Contains(m2.Fallback, "earlier profile") {
		t.Errorf("second profile: source %q time %v fallback %q", m2.Source, m2.TimeMS, m2.Fallback)
	}
	if p.Fallback() != reason {
		t.Errorf("Fallback() = %q", p.Fallback())
	}
}

// TestProfileError38FallsBack: the TCC pass fails with error 38 (at once:
// the passes' clock never moves, so no pass can time out).
func TestProfileError38FallsBack(t *testing.T) {
	e := newEnv(t)
	p := newProfiler(t, "err38")
	m, err := p.Run(context.Background(), e.request(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "rocprofv3 TCC pass failed: counter set exceeds the hardware limit (error 38): E20261129 10:15:42.123456 " +
		"139872 tool.cpp:1032] Could not construct profile cfg failed with error code 38: " +
		"Request exceeds the capabilities of the hardware to collect"
	if diff := cmp.Diff(wantSynthetic(t, 1.25, want), m, approx); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	runs := len(e.lines(t, e.invocations))
	if _, err := p.Run(context.Background(), e.request(t)); err != nil {
		t.Fatal(err)
	}
	if got := len(e.lines(t, e.invocations)); got != runs || runs != 3 {
		t.Errorf("runs: %d before the fallback (want 3), %d after a second profile", runs, got)
	}
}

// TestProfileFailuresFallBack covers the other ways a pass fails.
func TestProfileFailuresFallBack(t *testing.T) {
	tests := []struct {
		name   string
		env    []string
		mod    func(*Request)
		passes []Pass
		// want is a substring of the fallback reason.
		want   string
		wantMS float64 // the fallback's time
	}{
		{name: "no csv written", env: []string{"FAKE_ROCPROF_MODE=no-output"},
			want: "rocprofv3 kernel trace pass failed: no rocprofv3 output: no *_kernel_trace.csv under", wantMS: 1.25},
		{name: "csv without rows", env: []string{"FAKE_ROCPROF_MODE=empty"},
			want: "rocprofv3 kernel trace pass failed: no rocprofv3 output: kagent_kernel_trace.csv has no rows", wantMS: 1.25},
		{name: "the program fails", env: []string{"KAGENT_TEST_WRAPPER_FAIL=1"},
			want: "rocprofv3 kernel trace pass exited with status 1: RuntimeError: HIP error: invalid device function", wantMS: 1.25},
		{name: "rocprofv3 dies of a signal", env: []string{"FAKE_ROCPROF_MODE=abort"},
			want: "rocprofv3 SQ pass did not exit normally: rocprofv3: aqlprofile: fatal error in pmc setup; killed by signal aborted", wantMS: 1.25},
		{name: "kernels not found", mod: func(r *Request) { r.Filter = Filter{Names: []string{"layernorm"}} },
			want: `rocprofv3 kernel trace pass failed: no rocprofv3 output: kagent_kernel_trace.csv has no rows: no kernel matched --kernel-include-regex "(layernorm)"`, wantMS: 1.25},
		{name: "too few dispatches of the kernels", mod: func(r *Request) {
			r.Filter = Filter{Regex: regexp.MustCompile("^rmsnorm_st")}
			r.Window = Window{Last: 4}
		},
			want: `rocprofv3 kernel trace pass failed: select dispatches (regex ^rmsnorm_st): no dispatches of the candidate's kernels: the last 4 dispatches needed, only 3 matched; kernels seen: "rmsnorm_stats" x3`, wantMS: 1.25},
		{name: "window larger than the program", mod: func(r *Request) { r.Window = Window{Last: 7} },
			want: "the last 7 dispatches needed, only 6 matched", wantMS: 1.25},
		{name: "FETCH_SIZE with WRITE_SIZE: error 38; the traced time stands in",
			mod:    func(r *Request) { r.Synthetic.TimeMS = 0 },
			passes: []Pass{{Name: "bytes", Counters: []string{"FETCH_SIZE", "WRITE_SIZE"}}},
			want:   "rocprofv3 bytes pass failed: counter set exceeds the hardware limit (error 38)", wantMS: 1},
		{name: "a counter gfx942 does not have",
			passes: []Pass{{Name: "TCC", Counters: []string{"TCC_EA_RDREQ_sum"}}},
			want:   "rocprofv3 TCC pass exited with status 1: rocprofv3: error: counter 'TCC_EA_RDREQ_sum' is not available", wantMS: 1.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			p := newProfiler(t, "ok", func(c *Config) { c.Passes = tt.passes })
			req := e.request(t, tt.env...)
			if tt.mod != nil {
				tt.mod(&req)
			}
			m, err := p.Run(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if m.Source != synthetic.Source || !strings.Contains(m.Fallback, tt.want) {
				t.Errorf("source %q, fallback %q, want it to contain %q", m.Source, m.Fallback, tt.want)
			}
			if m.TimeMS != tt.wantMS {
				t.Errorf("time %v ms, want %v", m.TimeMS, tt.wantMS)
			}
			if p.Fallback() == "" {
				t.Error("the profiler did not stay in fallback")
			}
		})
	}
}

// TestCancelIsNotAFallback: a caller's cancellation is an error, not a
// reason to give up on rocprofv3, and still kills the pass's group.
func TestCancelIsNotAFallback(t *testing.T) {
	e := newEnv(t)
	p := newProfiler(t, "hang_fetch")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, _, err := runAsync(ctx, p, e.request(t))
	// Cancel once the FETCH_SIZE pass has started hanging.
	proctest.WaitLine(t, e.pids)
	cancel()
	proctest.Await(t, done, "the profile still waits after the cancellation")
	if !errors.Is(*err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", *err)
	}
	if p.Fallback() != "" {
		t.Errorf("cancellation made the profiler sticky: %q", p.Fallback())
	}
	assertGroupGone(t, e.pids)
}

func TestMissingBinary(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, bin, path string
		want            string
	}{
		{"configured path", "/nonexistent/rocprofv3", os.Getenv("PATH"), `platform_kwargs.rocprof_bin_path is "/nonexistent/rocprofv3"`},
		{"not in PATH", "", t.TempDir(), `"rocprofv3" is not in PATH; install ROCm's rocprofiler-sdk (it ships /opt/rocm/bin/rocprofv3) or set platform_kwargs.rocprof_bin_path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			p := newProfiler(t, "ok", func(c *Config) { c.BinPath = tt.bin })
			_, err := p.Run(context.Background(), e.request(t))
			if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrNotFound mentioning %s", err, tt.want)
			}
			if p.Fallback() != "" {
				t.Errorf("sticky after a missing binary: %q", p.Fallback())
			}
		})
	}
}

// TestConcurrentProfilesRunOnce: profiles run one at a time, and those
// that waited behind the failing one do not start rocprofv3 again.
func TestConcurrentProfilesRunOnce(t *testing.T) {
	e := newEnv(t)
	p := newProfiler(t, "err38")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	ms := make([]roofline.Metrics, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms[i], errs[i] = p.Run(context.Background(), e.request(t))
		}()
	}
	wg.Wait()
	for i := range 4 {
		if errs[i] != nil || ms[i].Source != synthetic.Source {
			t.Errorf("profile %d: %v, source %q", i, errs[i], ms[i].Source)
		}
	}
	if runs := e.lines(t, e.invocations); len(runs) != 3 {
		t.Errorf("rocprofv3 ran %d times (%v), want 3: trace, SQ, and the failing TCC pass", len(runs), runs)
	}
}

func TestProfileCandidate(t *testing.T) {
	e := newEnv(t)
	req := e.request(t)
	req.ID = ""
	var got platform.Candidate
	p := newProfiler(t, "err38", func(c *Config) {
		c.Prepare = func(_ context.Context, cand platform.Candidate) (Request, error) {
			got = cand
			return req, nil
		}
	})
	m, err := p.Profile(context.Background(), platform.Candidate{ID: "r3c1", Path: "/k/r3c1.py"})
	if err != nil || got.ID != "r3c1" || m.Source != synthetic.Source {
		t.Errorf("Profile: %v, candidate %+v, source %q", err, got, m.Source)
	}

	bare := newProfiler(t, "ok")
	if _, err := bare.Profile(context.Background(), platform.Candidate{ID: "x"}); !errors.Is(err, ErrConfig) {
		t.Errorf("without Prepare: %v, want ErrConfig", err)
	}
}

func TestNoTimeForTheFallback(t *testing.T) {
	e := newEnv(t)
	req := e.request(t, "FAKE_ROCPROF_MODE=no-output")
	req.Synthetic.TimeMS = 0
	_, err := newProfiler(t, "ok").Run(context.Background(), req)
	if !errors.Is(err, synthetic.ErrNoTime) || !strings.Contains(err.Error(), "kernel trace pass failed") {
		t.Errorf("err = %v, want synthetic.ErrNoTime with the reason", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{PassTimeout: -1},
		{Passes: []Pass{{Name: "x"}}},
		{Passes: []Pass{{Name: "x", Counters: []string{"A B"}}}},
		{Passes: []Pass{{Counters: []string{"A"}}}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
	p := newProfiler(t, "ok")
	for _, req := range []Request{{}, {Wrapper: Wrapper{Script: "w.py"}, Window: Window{Last: 1, Skip: 1}}} {
		if _, err := p.Run(context.Background(), req); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", req, err)
		}
	}
}

func TestApplyKwargs(t *testing.T) {
	tests := []struct {
		kw      map[string]string
		want    Config
		wantErr bool
	}{
		{map[string]string{"rocprof_bin_path": " /opt/rocm/bin/rocprofv3 ", "ncu_bin_path": "x"},
			Config{BinPath: "/opt/rocm/bin/rocprofv3"}, false},
		{map[string]string{"rocprof_pass_timeout": "90s"}, Config{PassTimeout: 90 * time.Second}, false},
		{map[string]string{"rocprof_pass_timeout": "45"}, Config{PassTimeout: 45 * time.Second}, false},
		{map[string]string{"rocprof_pass_timeout": "soon"}, Config{}, true},
		{map[string]string{"rocprof_pass_timeout": "-1s"}, Config{}, true},
	}
	for _, tt := range tests {
		var c Config
		err := c.ApplyKwargs(tt.kw)
		if (err != nil) != tt.wantErr || c.BinPath != tt.want.BinPath || c.PassTimeout != tt.want.PassTimeout {
			t.Errorf("ApplyKwargs(%v) = %+v, %v", tt.kw, c, err)
		}
	}
}

// assertGroupGone checks that no live process is left in the process
// group of the hanging fake (its pid, from the pids file, is the group
// id). Zombies, waiting for init to reap them, count as gone.
func assertGroupGone(t *testing.T, pidsFile string) {
	t.Helper()
	b, err := os.ReadFile(pidsFile)
	if err != nil {
		t.Fatalf("the fake did not record its pids: %v", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		t.Fatalf("pids file %q", b)
	}
	pgid, _ := strconv.Atoi(fields[0])
	child, _ := strconv.Atoi(fields[1])
	if _, err := proctest.LiveInGroup(pgid); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Killed processes need the CPU to die: wait (a guard, not a timing
	// assertion).
	proctest.Wait(t, fmt.Sprintf("processes left in group %d", pgid), func() bool {
		live, _ := proctest.LiveInGroup(pgid)
		return len(live) == 0
	})
	for _, pid := range []int{pgid, child} {
		if state := proctest.State(pid); state != "" && state != "Z" {
			t.Errorf("pid %d is still alive (state %s)", pid, state)
		}
	}
}

// TestProfileIsolated: with Config.Isolate, every pass runs the command it
// builds (here, only the request's environment and a mark of its own), and
// the profile is the same.
func TestProfileIsolated(t *testing.T) {
	e := newEnv(t)
	var built []string
	p := newProfiler(t, "ok", func(c *Config) {
		c.Isolate = func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
			built = append(built, filepath.Base(argv[0]))
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH")}, env...), "KAGENT_TEST_WRAPPER_ENV=isolated")
			cmd.Dir = dir
			return cmd, nil
		}
	})
	m, err := p.Run(context.Background(), e.request(t))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantTestdataMetrics(), m, approx); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	runs := e.lines(t, e.wrapperLog)
	if len(built) != 5 || len(runs) != 5 {
		t.Fatalf("%d commands built, %d wrapper runs; want 5 of each", len(built), len(runs))
	}
	for _, line := range runs {
		if !strings.Contains(line, `"env": "isolated"`) {
			t.Errorf("a pass ran without the isolator's environment: %s", line)
		}
	}
}
