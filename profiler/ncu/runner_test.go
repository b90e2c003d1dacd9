package ncu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/proc/proctest"
	"github.com/kagent-kernels/kagent/platform"
)

// fakeNCU copies testdata/fake-ncu into a temp dir (so the executable bit
// does not depend on the checkout) and returns its path.
func fakeNCU(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "fake-ncu"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ncu")
	if err := os.WriteFile(p, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func sample(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testRun(dir string) Run {
	return Run{GPU: "test-" + dir, Dir: dir, Command: Command{
		Metrics: []string{MetricTime}, Program: []string{"python3", "wrap.py"},
	}}
}

func TestRunnerOK(t *testing.T) {
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	r := &Runner{NCU: fakeNCU(t), Env: []string{
		"FAKE_NCU_MODE=ok", "FAKE_NCU_CSV=" + sample(t, "raw_disable_extra_suffixes_via_log_file.csv"), "FAKE_NCU_ARGS=" + argsFile,
	}}
	run := testRun(dir)
	run.Command.KernelRegex = Filter{Names: []string{"axpy"}}.NCURegex()
	rep, err := r.Run(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Launches) != 2 || rep.Launches[0].Kernel != "axpy" {
		t.Fatalf("launches %+v", rep.Launches)
	}
	args, _ := os.ReadFile(argsFile)
	for _, want := range []string{"--profile-from-start\noff\n", "-k\nregex:^(axpy)(_[0-9][0-9a-z]*)?$\n", "--clock-control\nnone\n", "--log-file\n" + dir + "/ncu-"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("args lack %q:\n%s", want, args)
		}
	}
	// The log file is removed after parsing.
	if m, _ := filepath.Glob(filepath.Join(dir, "ncu-*.csv")); len(m) != 0 {
		t.Errorf("log files left: %v", m)
	}
}

func TestRunnerFailures(t *testing.T) {
	tests := []struct {
		mode    string
		want    error
		errHas  []string
		exitGt0 bool
	}{
		{"perm", ErrPermission, []string{"NVreg_RestrictProfilingToAdminUsers=0", "root", "ERR_NVGPUCTRPERM"}, true},
		{"appfail", ErrExit, []string{"(exit status 1): CheckFailure: importing cand.py", "illegal memory access", "The application returned an error code"}, true},
		{"sandbox", ErrUnsupported, []string{"LibraryNotLoaded"}, true},
		{"badmetric", ErrUnknownMetric, []string{"sm__ops_path_tensor_src_fp8.sum"}, true},
		{"nokernels", ErrNoKernels, []string{"rmsnorm_kernel"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			dir := t.TempDir()
			r := &Runner{NCU: fakeNCU(t), Env: []string{"FAKE_NCU_MODE=" + tt.mode}}
			run := testRun(dir)
			run.Command.Metrics = []string{MetricTime, "sm__ops_path_tensor_src_fp8.sum"}
			_, err := r.Run(context.Background(), run)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var re *RunError
			if !errors.As(err, &re) {
				t.Fatalf("%T is not a *RunError", err)
			}
			if (re.ExitCode > 0) != tt.exitGt0 {
				t.Errorf("exit code %d", re.ExitCode)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q:\n%v", s, err)
				}
			}
		})
	}
}

func TestRunnerNotFound(t *testing.T) {
	r := &Runner{NCU: filepath.Join(t.TempDir(), "no-such-ncu")}
	_, err := r.Run(context.Background(), testRun(t.TempDir()))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "ncu_bin_path") {
		t.Fatalf("err = %v", err)
	}
}

// runAsync starts r.Run and returns a channel closed when it has returned,
// with its error.
func runAsync(ctx context.Context, r *Runner, run Run) (done <-chan struct{}, err *error) {
	ch := make(chan struct{})
	err = new(error)
	go func() {
		defer close(ch)
		_, *err = r.Run(ctx, run)
	}()
	return ch, err
}

// TestRunnerTimeoutKillsGroup: the timeout passes (on a fake clock) once
// the fake ncu and its child run; both are killed.
func TestRunnerTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	clock := proctest.NewClock()
	r := &Runner{NCU: fakeNCU(t), Timeout: 200 * time.Millisecond, KillGrace: 100 * time.Millisecond, After: clock.After,
		Env: []string{"FAKE_NCU_MODE=hang", "FAKE_NCU_PIDFILE=" + pidFile}}
	done, err := runAsync(context.Background(), r, testRun(dir))
	proctest.WaitLine(t, pidFile)
	clock.Advance(r.Timeout)
	proctest.Await(t, done, "the run still waits after its timeout")
	if !errors.Is(*err, ErrTimeout) || !strings.Contains((*err).Error(), "killed after 200ms") {
		t.Fatalf("err = %v, want ErrTimeout after 200ms", *err)
	}
	// The grandchild (sleep) was in ncu's process group: it is killed
	// too. Signals are asynchronous, so allow it a moment to die.
	proctest.WaitGone(t, proctest.ReadPID(t, pidFile))
}

// TestRunnerParentCancel: the caller's cancellation, once the fake ncu
// runs, is not a timeout (the runner's clock never moves).
func TestRunnerParentCancel(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &Runner{NCU: fakeNCU(t), KillGrace: 100 * time.Millisecond, After: proctest.NewClock().After,
		Env: []string{"FAKE_NCU_MODE=hang", "FAKE_NCU_PIDFILE=" + pidFile}}
	done, err := runAsync(ctx, r, testRun(dir))
	proctest.WaitLine(t, pidFile)
	cancel()
	proctest.Await(t, done, "the run still waits after the cancellation")
	if !errors.Is(*err, context.Canceled) || errors.Is(*err, ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled", *err)
	}
	proctest.WaitGone(t, proctest.ReadPID(t, pidFile))
}

func TestLockGPUHonoursContext(t *testing.T) {
	unlock, err := LockGPU(context.Background(), "lock-test")
	if err != nil {
		t.Fatal(err)
	}
	// A profile of the same GPU waits for the lock and gives up with ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := &Runner{NCU: fakeNCU(t), Env: []string{"FAKE_NCU_MODE=ok"}}
	run := testRun(t.TempDir())
	run.GPU = "lock-test"
	if _, err := r.Run(ctx, run); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	// Another GPU is not blocked.
	u2, err := LockGPU(context.Background(), "lock-test-2")
	if err != nil {
		t.Fatal(err)
	}
	u2()
	unlock()
	unlock() // idempotent
	u3, err := LockGPU(context.Background(), "lock-test")
	if err != nil {
		t.Fatal(err)
	}
	u3()
}

const axpySource = `
import triton
import triton.language as tl

@triton.jit
def axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n && offs >= 0
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def kernel_function(x, y):
    out = torch.empty_like(x)
    axpy[(triton.cdiv(x.numel(), 1024),)](x, y, out, 2.0, x.numel(), BLOCK=1024)
    return out
`

func newTestProfiler(t *testing.T, mode, csv string) (*Profiler, string) {
	t.Helper()
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	p, err := New(Config{
		NCUPath: fakeNCU(t), HarnessDir: "/opt/kagent/harness", ProblemPath: "/k/problem.py",
		DType: "fp32", GPU: "profiler-" + mode, WorkDir: dir,
		Env: []string{"FAKE_NCU_MODE=" + mode, "FAKE_NCU_CSV=" + sample(t, csv), "FAKE_NCU_ARGS=" + argsFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, argsFile
}

func TestProfilerProfile(t *testing.T) {
	p, argsFile := newTestProfiler(t, "ok", "raw_disable_extra_suffixes_via_log_file.csv")
	m, err := p.Profile(context.Background(), platform.Candidate{ID: "r1c2", Path: "/k/cand.py", Source: axpySource})
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "ncu" || len(m.Kernels) != 1 || m.Kernels[0] != "axpy" || m.TimeMS != (46240+44224)/1e6 {
		t.Errorf("metrics %+v", m)
	}
	args, _ := os.ReadFile(argsFile)
	for _, want := range []string{"regex:^(axpy)(_[0-9][0-9a-z]*)?$", "--launch-count\n256\n", "python3\n", "ncu_wrapper_r1c2_1.py\n", "sm__throughput.avg.pct_of_peak_sustained_elapsed,"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("args lack %q", want)
		}
	}
}

func TestProfilerRetriesWithoutOptionalMetrics(t *testing.T) {
	p, argsFile := newTestProfiler(t, "badmetric", "raw_disable_extra_suffixes_via_log_file.csv")
	m, err := p.Profile(context.Background(), platform.Candidate{ID: "c", Path: "/k/cand.py", Source: axpySource})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) == 0 || !strings.Contains(m.Warnings[0], "profiled without them") {
		t.Errorf("warnings %q", m.Warnings)
	}
	args, _ := os.ReadFile(argsFile)
	if strings.Contains(string(args), "sm__ops_path_tensor") {
		t.Error("second run still asked for the optional metrics")
	}
}

func TestProfilerNoMatchingKernel(t *testing.T) {
	// The sample holds only PyTorch kernels; the candidate's axpy is absent.
	p, _ := newTestProfiler(t, "ok", "raw_page_default_suffix_expansion.csv")
	_, err := p.Profile(context.Background(), platform.Candidate{ID: "c", Path: "/k/cand.py", Source: axpySource})
	if !errors.Is(err, ErrNoKernels) || !strings.Contains(err.Error(), "vectorized_elementwise_kernel") {
		t.Fatalf("err = %v", err)
	}
}

func TestProfilerPermission(t *testing.T) {
	p, _ := newTestProfiler(t, "perm", "raw_page_default_suffix_expansion.csv")
	_, err := p.Profile(context.Background(), platform.Candidate{ID: "c", Path: "/k/cand.py", Source: axpySource})
	if !errors.Is(err, ErrPermission) || !strings.HasPrefix(err.Error(), "profile c: profile with ncu: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{
		{ProblemPath: "/p"},
		{HarnessDir: "/h"},
		{HarnessDir: "/h", ProblemPath: "/p", Mark: "count"},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v) = %v", cfg, err)
		}
	}
}

func TestProfilerTwoKernelCandidate(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "rmsnorm_two_kernels_candidate.py.txt"))
	if err != nil {
		t.Fatal(err)
	}
	p, argsFile := newTestProfiler(t, "ok", "h200_triton_rmsnorm_two_kernels_range.csv")
	m, err := p.Profile(context.Background(), platform.Candidate{ID: "r0", Path: "/k/input.py", Source: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Kernels) != 2 || m.Kernels[0] != "sumsq_kernel" || m.Kernels[1] != "scale_kernel" {
		t.Errorf("kernels %q", m.Kernels)
	}
	// The two KernelAgent metrics this ncu does not know are reported once.
	want := "ncu did not report (unknown to this ncu or GPU): sm__inst_executed_pipe_fp32.avg.pct_of_peak_sustained_active, " +
		"smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct"
	if len(m.Warnings) != 1 || m.Warnings[0] != want {
		t.Errorf("warnings %q", m.Warnings)
	}
	args, _ := os.ReadFile(argsFile)
	if !strings.Contains(string(args), "regex:^(sumsq_kernel|scale_kernel)(_[0-9][0-9a-z]*)?$") {
		t.Errorf("args:\n%s", args)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		output string
		failed bool
		want   error
	}{
		{"counter permission token", "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", false, ErrPermission},
		{"ncu permission line", "==ERROR== The user does not have permission to profile on the target device.", true, ErrPermission},
		{"the program's own PermissionError", "PermissionError: [Errno 13] Permission denied: '/cache'\n==ERROR== The application returned an error code (1).", true, nil},
		{"sandbox", "==ERROR== Failed to initialize the profiler: LibraryNotLoaded", true, ErrUnsupported},
		{"unknown metric, run failed", "==ERROR== Failed to find metric sm__x.sum", true, ErrUnknownMetric},
		{"unknown metric text, run succeeded", "==ERROR== Failed to find metric sm__x.sum", false, nil},
		{"a program print about metrics", "metric loss not found in logs", true, nil},
		{"clean", "==PROF== Connected to process 1", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.output, tt.failed); got.err != tt.want {
				t.Errorf("classify = %v (%s), want %v", got.err, got.detail, tt.want)
			}
		})
	}
}

// TestReplayCostAndPhases: the debug log's numbers come from the wrapper's
// phases line and from ncu's replay columns of the profiled launches.
func TestReplayCostAndPhases(t *testing.T) {
	out := "==PROF== Connected\nkagent: profiled call done\nkagent: profile phases: load 1.000 s, warm-up 0.100 s, profiled call 2.000 s\n"
	if got, want := wrapperPhases(out), "load 1.000 s, warm-up 0.100 s, profiled call 2.000 s"; got != want {
		t.Errorf("wrapperPhases = %q, want %q", got, want)
	}
	if got := wrapperPhases("kagent: profiled call done\n"); got != "" {
		t.Errorf("wrapperPhases without the line = %q, want empty", got)
	}
	now := time.UnixMilli(1_800_000_002_500)
	for line, want := range map[string]time.Duration{
		"kagent: profiled call done at 1800000000.250": 2250 * time.Millisecond,
		"kagent: profiled call done":                   0, // no clock
		"kagent: profiled call done at 1800000009.000": 0, // after now
		"kagent: profiled call done at 1000":           0, // long before the run
		"kagent: profiled call done at 1e400":          0,
	} {
		if got := afterProgram("==PROF== Connected\n"+line+"\n", now); got != want {
			t.Errorf("afterProgram(%q) = %s, want %s", line, got, want)
		}
	}
	// A candidate printing the wrapper's lines from its calls prints them
	// before the wrapper's own, which are read.
	forged := "kagent: profiled call done at 1800000002.400\nkagent: profile phases: load 0 s\n" +
		"kagent: profiled call done at 1800000000.250\nkagent: profile phases: load 1.000 s\n"
	if got := afterProgram(forged, now); got != 2250*time.Millisecond {
		t.Errorf("afterProgram read a forged earlier line: %s, want 2.25s", got)
	}
	if got := wrapperPhases(forged); got != "load 1.000 s" {
		t.Errorf("wrapperPhases read a forged earlier line: %q", got)
	}
	// The candidate shares the wrapper's process and may print a line of its
	// own: only maxPhasesLen bytes of it are kept.
	if got := wrapperPhases("kagent: profile phases: " + strings.Repeat("x", 10000) + "\n"); len(got) != maxPhasesLen {
		t.Errorf("a forged phases line kept %d bytes, want %d", len(got), maxPhasesLen)
	}
	ls := []Launch{
		{Values: map[string]float64{"profiler__replayer_passes": 9, "profiler__replayer_bytes_mem_backed_up.sum": 2e9}},
		{Values: map[string]float64{"profiler__replayer_passes": 9, "profiler__replayer_bytes_mem_backed_up.sum": 3e9}},
		{Values: map[string]float64{}},
	}
	if passes, saved := replayCost(ls); passes != 18 || saved != 3e9 {
		t.Errorf("replayCost = %d passes, %g bytes; want 18, 3e9", passes, saved)
	}
}
