package ncu

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/internal/proc"
)

// Defaults of a Runner.
const (
	DefaultTimeout   = 5 * time.Minute
	DefaultKillGrace = proc.DefaultKillGrace
	// tailBytes is how much of ncu's and the program's output an error keeps.
	tailBytes = 16 << 10
)

// Runner runs ncu as a supervised subprocess: its own process group,
// killed as a group (SIGTERM, then SIGKILL) on timeout or cancellation, a
// bounded tail of its output kept for errors, and at most one profile per
// GPU at a time. The zero value is usable.
type Runner struct {
	// NCU is the ncu binary (ncu_bin_path): a path, or a name looked up in
	// PATH. "" tries "ncu" in PATH, then /usr/local/cuda/bin/ncu.
	NCU string
	// Env is added to the environment of ncu and the profiled program.
	Env []string
	// Timeout bounds one run (0 = DefaultTimeout).
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL to the group
	// (0 = DefaultKillGrace).
	KillGrace time.Duration
	// Logger receives debug lines (nil = discard).
	Logger *slog.Logger
	// After starts the timer of Timeout (nil = time.After); tests pass a
	// fake clock's (proctest.Clock).
	After func(time.Duration) <-chan time.Time
	// Isolate, when set, builds the command (nil = as kagent's own child,
	// in kagent's environment).
	Isolate Isolator
}

// Isolator builds the command that runs argv (ncu, its arguments and the
// profiled program) apart from kagent, typically inside an OS sandbox: env
// is added to the command's own environment, and dir (the run's wrapper,
// job file, candidate copy and ncu's log) is its working directory and, in
// a sandbox, the one host path it may write.
type Isolator func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error)

// Run is one profile: where to run and what.
type Run struct {
	// GPU is the CUDA_VISIBLE_DEVICES value for the program and the key of
	// the per-GPU lock ("" = leave CUDA_VISIBLE_DEVICES alone; lock "default").
	GPU string
	// Dir is the working directory; ncu's log file is written there.
	Dir     string
	Command Command
}

// Run executes ncu and parses its CSV. Errors wrap one of the package's
// sentinels in a *RunError carrying the output tail: ErrNotFound,
// ErrPermission, ErrUnsupported, ErrUnknownMetric, ErrTimeout, ErrExit, or
// ErrNoKernels when the marked call launched no matching kernel.
func (r *Runner) Run(ctx context.Context, run Run) (*Report, error) {
	l, err := r.launchSpec(run)
	if err != nil {
		return nil, err
	}
	defer os.Remove(l.logPath)
	unlock, err := LockGPU(ctx, run.GPU)
	if err != nil {
		return nil, fmt.Errorf("profile with ncu: wait for gpu %q: %w", run.GPU, err)
	}
	defer unlock()
	timeout := r.timeout()
	r.logger().Debug("ncu start", "bin", l.cmd.Path, "args", l.cmd.Args, "gpu", run.GPU)
	start := time.Now()
	l.cmd.Timeout = timeout
	res, ctxErr := proc.Run(ctx, l.cmd)
	r.logger().Debug("ncu done", "elapsed", time.Since(start), "err", res.Err)
	if ctxErr != nil {
		return nil, fmt.Errorf("profile with ncu: %w", ctxErr)
	}
	return r.report(res, l.logPath, timeout)
}

// launch is an ncu command ready to run and the log file it writes.
type launch struct {
	cmd     proc.Command
	logPath string
}

func (r *Runner) launchSpec(run Run) (launch, error) {
	bin, err := r.resolve()
	if err != nil {
		return launch{}, err
	}
	dir := run.Dir
	if dir == "" {
		if r.Isolate != nil {
			// The sandbox may write the run's folder: never a shared one.
			return launch{}, fmt.Errorf("profile with ncu: %w: a sandboxed run needs a folder of its own", ErrConfig)
		}
		dir = os.TempDir()
	}
	logf, err := os.CreateTemp(dir, "ncu-*.csv")
	if err != nil {
		return launch{}, fmt.Errorf("profile with ncu: %w", err)
	}
	logPath := logf.Name()
	logf.Close()
	cmdSpec := run.Command
	cmdSpec.LogFile = logPath
	args, err := cmdSpec.Args()
	if err != nil {
		os.Remove(logPath)
		return launch{}, err
	}
	env := r.Env
	if run.GPU != "" {
		env = append(append([]string(nil), env...), "CUDA_VISIBLE_DEVICES="+run.GPU)
	}
	cmd := proc.Command{Path: bin, Args: args, Dir: run.Dir, Env: env, KillGrace: r.KillGrace, TailBytes: tailBytes, After: r.After}
	if isolate := r.Isolate; isolate != nil {
		argv := append([]string{bin}, args...)
		cmd.Prepared = func(ctx context.Context) (*exec.Cmd, error) { return isolate(ctx, argv, env, dir) }
	}
	return launch{logPath: logPath, cmd: cmd}, nil
}

func (r *Runner) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

// report reads the log of a finished run and turns its outcome into a
// Report or an error.
func (r *Runner) report(res proc.Result, logPath string, timeout time.Duration) (*Report, error) {
	logData, output := runOutput(logPath, res)
	exit := res.ExitCode
	fail := func(sentinel error, detail string) error {
		return &RunError{Err: sentinel, ExitCode: exit, Detail: detail, Tail: proc.LastLines(output, 40, isCSVRow)}
	}
	if res.TimedOut {
		return nil, fail(ErrTimeout, fmt.Sprintf("killed after %s", timeout))
	}
	if msg := classify(output, res.Err != nil); msg.err != nil {
		return nil, fail(msg.err, msg.detail)
	}
	if res.Err != nil {
		return nil, fail(ErrExit, failureDetail(output))
	}
	rep, err := Parse(bytes.NewReader(logData))
	if err != nil {
		return nil, fail(err, "")
	}
	rep.Phases = wrapperPhases(output)
	rep.AfterProgram = afterProgram(output, time.Now())
	if len(rep.Launches) == 0 {
		detail := "the marked call launched no kernel matching the filter"
		if len(rep.Available) > 0 {
			detail += "; ncu saw: " + strings.Join(rep.Available, ", ")
		}
		return rep, fail(ErrNoKernels, detail)
	}
	return rep, nil
}

// Pending is an ncu run started ahead of its profile: its program waits
// for a job (Wrapper.JobFile) before it touches the GPU, so it holds no GPU
// lock until Finish hands it one.
type Pending struct {
	r       *Runner
	gpu     string
	logPath string
	cancel  context.CancelFunc
	done    chan struct{}
	res     proc.Result // set before done is closed
}

// Start launches run's program under ncu and returns at once.
func (r *Runner) Start(run Run) (*Pending, error) {
	l, err := r.launchSpec(run)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pending{r: r, gpu: run.GPU, logPath: l.logPath, cancel: cancel, done: make(chan struct{})}
	r.logger().Debug("ncu start ahead", "bin", l.cmd.Path, "args", l.cmd.Args, "gpu", run.GPU)
	go func() {
		p.res, _ = proc.Run(ctx, l.cmd)
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the run has already ended (its program failed to
// start, or waited in vain for a job).
func (p *Pending) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Finish takes the GPU's lock, calls submit (which hands the program its
// job), and waits for the run, within the runner's timeout from that
// moment. A run that ended before its job came gives ErrExit.
func (p *Pending) Finish(ctx context.Context, submit func() error) (*Report, error) {
	defer os.Remove(p.logPath)
	defer p.Abandon()
	unlock, err := LockGPU(ctx, p.gpu)
	if err != nil {
		return nil, fmt.Errorf("profile with ncu: wait for gpu %q: %w", p.gpu, err)
	}
	defer unlock()
	if p.Exited() {
		rep, err := p.r.report(p.res, p.logPath, 0)
		if err == nil {
			err = &RunError{Err: ErrExit, ExitCode: p.res.ExitCode, Detail: "the profiler started ahead ended before its job"}
		}
		return rep, err
	}
	if err := submit(); err != nil {
		return nil, fmt.Errorf("profile with ncu: hand over the job: %w", err)
	}
	timeout := p.r.timeout()
	after := p.r.After
	if after == nil {
		after = time.After
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Abandon()
		return nil, fmt.Errorf("profile with ncu: %w", ctx.Err())
	case <-after(timeout):
		p.Abandon()
		p.res.TimedOut = true
	}
	return p.r.report(p.res, p.logPath, timeout)
}

// Output is what the run wrote (ncu's log, then the program's output
// tail), once it has ended; "" while it runs.
func (p *Pending) Output() string {
	if !p.Exited() {
		return ""
	}
	_, output := runOutput(p.logPath, p.res)
	return output
}

// runOutput is a finished run's ncu log, and that log followed by the end
// of what ncu and the program printed.
func runOutput(logPath string, res proc.Result) (logData []byte, output string) {
	logData, _ = os.ReadFile(logPath)
	return logData, string(logData) + "\n" + res.Output
}

// Abandon kills the run's process group (if it still runs) and waits for
// it to end.
func (p *Pending) Abandon() {
	p.cancel()
	<-p.done
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// Binary is the ncu binary the runner starts (NCU resolved as Run does).
func (r *Runner) Binary() (string, error) { return r.resolve() }

// resolve finds the ncu binary.
func (r *Runner) resolve() (string, error) {
	if r.NCU != "" {
		p, err := exec.LookPath(r.NCU)
		if err != nil {
			return "", &RunError{Err: ErrNotFound, ExitCode: -1,
				Detail: fmt.Sprintf("%q (ncu_bin_path): %v", r.NCU, err)}
		}
		return p, nil
	}
	if p, err := exec.LookPath("ncu"); err == nil {
		return p, nil
	}
	const fallback = "/usr/local/cuda/bin/ncu"
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", &RunError{Err: ErrNotFound, ExitCode: -1,
		Detail: "not in PATH nor at " + fallback + ": install Nsight Compute or set platform_kwargs.ncu_bin_path"}
}

type diagnosis struct {
	err    error
	detail string
}

var unknownMetricPattern = regexp.MustCompile(`(?im)^==ERROR==.*(failed to find metric|unknown metric|invalid metric|metric .* (?:not found|is not supported|not available)).*$`)

// classify recognises the failures that need a specific message. It looks
// at ncu's own ==ERROR== lines for "permission" so that a program's
// PermissionError is not mistaken for a counter problem. An unknown metric
// counts only when the run failed (ncu 2025.3 drops unknown metrics
// silently; older versions stop).
func classify(output string, failed bool) diagnosis {
	if strings.Contains(output, "ERR_NVGPUCTRPERM") {
		return diagnosis{ErrPermission, permissionFix}
	}
	for _, line := range strings.Split(output, "\n") {
		if strings.HasPrefix(line, "==ERROR==") && strings.Contains(strings.ToLower(line), "permission") {
			return diagnosis{ErrPermission, strings.TrimSpace(line) + "; " + permissionFix}
		}
	}
	if strings.Contains(output, "LibraryNotLoaded") || strings.Contains(output, "Failed to initialize the profiler") {
		return diagnosis{ErrUnsupported, "the profiler could not initialise (sandboxed kernels such as gVisor cannot read counters): " + firstError(output)}
	}
	if m := unknownMetricPattern.FindString(output); failed && m != "" {
		return diagnosis{ErrUnknownMetric, strings.TrimSpace(strings.TrimPrefix(m, "==ERROR=="))}
	}
	return diagnosis{}
}

// setupFailure is the wrapper's one-line report of a failure to load the
// problem or the candidate, or "".
func setupFailure(output string) string {
	const prefix = "kagent: profile setup failed: "
	for _, line := range strings.Split(output, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(line, prefix))
		}
	}
	return ""
}

// failureDetail says why a run failed: the wrapper's setup failure, else
// ncu's first error.
func failureDetail(output string) string {
	if detail := setupFailure(output); detail != "" {
		return detail
	}
	return firstError(output)
}

// firstError is ncu's first ==ERROR== line, or "".
func firstError(output string) string {
	for _, line := range strings.Split(output, "\n") {
		if strings.HasPrefix(line, "==ERROR==") {
			return strings.TrimSpace(strings.TrimPrefix(line, "==ERROR=="))
		}
	}
	return ""
}

// isCSVRow reports a row of ncu's CSV log: long, and already parsed, so
// error tails keep only the messages.
// wrapperPhases is the wrapper's phases line in output, less its prefix, at
// most maxPhasesLen bytes: the candidate runs in the same process and may
// print such a line too, so it is only ever logged (quoted by slog).
func wrapperPhases(output string) string {
	return lastMatch(output, phasesLine)
}

// lastMatch is the first group of the last line of output that re matches,
// at most maxPhasesLen bytes of it. The wrapper prints its own lines after
// the candidate's last call, so a line the candidate printed to look like
// them comes earlier and is not the one read.
func lastMatch(output string, re *regexp.Regexp) string {
	lines := strings.Split(output, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if m := re.FindStringSubmatch(strings.TrimSpace(lines[i])); m != nil {
			if len(m[1]) > maxPhasesLen {
				return strings.ToValidUTF8(m[1][:maxPhasesLen], "")
			}
			return m[1]
		}
	}
	return ""
}

// doneLine matches the line the wrapper prints when its profiled call is
// done, with the wall clock then.
var doneLine = regexp.MustCompile(`^kagent: profiled call done at ([0-9]+(?:\.[0-9]+)?)$`)

// afterProgram is how long before now the wrapper said its profiled call
// was done; 0 when it did not say, or said something impossible (the
// candidate runs in the same process and may print such a line too, so it
// is only ever logged).
func afterProgram(output string, now time.Time) time.Duration {
	at, err := strconv.ParseFloat(lastMatch(output, doneLine), 64)
	if err != nil {
		return 0
	}
	d := now.Sub(time.UnixMilli(int64(math.Round(at * 1e3))))
	if d < 0 || d > time.Hour {
		return 0
	}
	return d
}

// maxPhasesLen bounds the phases logged (the wrapper's own line is about 260 bytes).
const maxPhasesLen = 400

func isCSVRow(line string) bool { return strings.HasPrefix(line, `"`) }

// gpuLocks holds one semaphore (a 1-buffered channel) per GPU key.
var gpuLocks sync.Map

// LockGPU takes the process-wide profiling lock of one GPU, waiting until
// it is free or ctx is done. Benchmarkers should take it too, so that a
// profile's kernel replays never overlap a timing on the same GPU. The
// returned function releases the lock.
func LockGPU(ctx context.Context, gpu string) (unlock func(), err error) {
	if gpu == "" {
		gpu = "default"
	}
	v, _ := gpuLocks.LoadOrStore(gpu, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-ch }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// InstallDirs are the folders ncu's launcher (bin, as Binary resolves it)
// looks in for the Nsight Compute installation, which a sandbox must show
// besides bin's own folder: the nsight-compute* folders next to its bin
// folder (in a CUDA toolkit often links into /opt/nvidia, hence also the
// folders they name) and /opt/nvidia/nsight-compute. Only existing ones.
func InstallDirs(bin string) []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if _, err := os.Stat(d); err == nil && !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	roots := []string{filepath.Dir(filepath.Dir(bin))}
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		roots = append(roots, filepath.Dir(filepath.Dir(real)))
	}
	for _, root := range roots {
		matches, _ := filepath.Glob(filepath.Join(root, "nsight-compute*"))
		for _, m := range matches {
			add(m)
			if real, err := filepath.EvalSymlinks(m); err == nil {
				add(real)
			}
		}
	}
	add("/opt/nvidia/nsight-compute")
	return dirs
}
