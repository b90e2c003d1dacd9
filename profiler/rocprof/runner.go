package rocprof

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kagent-kernels/kagent/internal/proc"
)

// Defaults of a Runner and a Profiler.
const (
	DefaultBin         = "rocprofv3"
	DefaultPassTimeout = 120 * time.Second
	DefaultKillGrace   = proc.DefaultKillGrace
	// tailBytes is how much of a pass's output an error keeps.
	tailBytes = 16 << 10
	// tailLines is how many lines of it an error shows.
	tailLines = 30
)

// Wrapper is the program every pass runs: a Python script, rendered by the
// caller, that loads the problem and the candidate, warms it up and runs
// the profiled call (see Window).
type Wrapper struct {
	// Python is the interpreter ("" = python3).
	Python string
	// Script is the wrapper script's path.
	Script string
	// Args follow the script on the command line.
	Args []string
	// Env is added to the environment (KEY=VALUE; later entries win).
	Env []string
	// Dir is the working directory ("" = the caller's).
	Dir string
}

// Program is the command line rocprofv3 runs after "--".
func (w Wrapper) Program() []string {
	py := w.Python
	if py == "" {
		py = "python3"
	}
	return append([]string{py, w.Script}, w.Args...)
}

// PassOutput is what one successful pass produced.
type PassOutput struct {
	// Dispatches is the kernel trace (kernel-trace pass only).
	Dispatches []Dispatch
	// Counters are the counter dispatches (counter passes only).
	Counters []CounterDispatch
	// Agents are the GPU rows of agent_info.csv, when it was written.
	Agents []Agent
	// Files are the CSV files read.
	Files []string
}

// Runner runs rocprofv3 passes as supervised subprocesses: each in its own
// process group, killed as a group (SIGTERM, then SIGKILL after KillGrace)
// when its timeout or the caller's context ends, with a bounded tail of
// its output kept for errors. The zero value is usable.
type Runner struct {
	// Bin is the rocprofv3 binary (rocprof_bin_path): a path, or a name
	// looked up in PATH ("" = rocprofv3).
	Bin string
	// KillGrace is the time between SIGTERM and SIGKILL (0 = DefaultKillGrace).
	KillGrace time.Duration
	// Logger receives debug lines (nil = discard).
	Logger *slog.Logger
	// After starts a pass's timeout timer (nil = time.After); tests pass
	// a fake clock's (proctest.Clock).
	After func(time.Duration) <-chan time.Time
	// Isolate, when set, builds the command that runs argv (rocprofv3, its
	// arguments and the wrapper) apart from kagent, with env added to its
	// own environment and dir its working directory (nil = as kagent's own
	// child, in kagent's environment).
	Isolate func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error)
}

// Resolve finds the rocprofv3 binary; ErrNotFound names the setting.
func (r *Runner) Resolve() (string, error) {
	if r.Bin == "" {
		p, err := exec.LookPath(DefaultBin)
		if err != nil {
			return "", fmt.Errorf("find rocprofv3: %w: %q is not in PATH; install ROCm's rocprofiler-sdk "+
				"(it ships /opt/rocm/bin/rocprofv3) or set platform_kwargs.%s", ErrNotFound, DefaultBin, KwargBinPath)
		}
		return p, nil
	}
	p, err := exec.LookPath(r.Bin)
	if err != nil {
		return "", fmt.Errorf("find rocprofv3: %w: platform_kwargs.%s is %q: %v", ErrNotFound, KwargBinPath, r.Bin, err)
	}
	return p, nil
}

// Run runs one pass of w under rocprofv3, writing into outDir, and reads
// what it wrote. Failures are *PassError values wrapping ErrTimeout,
// ErrExceedsHWLimit, ErrPermission, ErrExit, ErrNoOutput or ErrParse; when
// ctx ends first, the error wraps ctx.Err() instead. The pass's process
// group is gone when Run returns.
func (r *Runner) Run(ctx context.Context, p Pass, timeout time.Duration, outDir, includeRegex string, w Wrapper) (*PassOutput, error) {
	bin, err := r.Resolve()
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = DefaultPassTimeout
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("run rocprofv3 %s pass: %w", p.Name, err)
	}
	args := p.Args(outDir, includeRegex, w.Program())

	r.logger().Debug("rocprofv3 pass start", "pass", p.Name, "bin", bin, "args", args, "timeout", timeout)
	start := time.Now()
	cmd := proc.Command{
		Path: bin, Args: args, Dir: w.Dir, Env: w.Env,
		Timeout: timeout, KillGrace: r.KillGrace, TailBytes: tailBytes, After: r.After,
	}
	if isolate := r.Isolate; isolate != nil {
		argv := append([]string{bin}, args...)
		cmd.Prepared = func(ctx context.Context) (*exec.Cmd, error) { return isolate(ctx, argv, w.Env, w.Dir) }
	}
	res, ctxErr := proc.Run(ctx, cmd)
	r.logger().Debug("rocprofv3 pass done", "pass", p.Name, "elapsed", time.Since(start), "err", res.Err)

	output := res.Output
	exit := res.ExitCode
	fail := func(sentinel error, detail string) *PassError {
		return &PassError{Pass: p.Name, Err: sentinel, ExitCode: exit, Detail: detail, Tail: proc.LastLines(output, tailLines, nil)}
	}
	// The context first: a killed rocprofv3 also exits non-zero.
	if ctxErr != nil {
		return nil, fmt.Errorf("run rocprofv3 %s pass: %w", p.Name, ctxErr)
	}
	if res.TimedOut {
		pe := fail(ErrTimeout, "")
		pe.Timeout = timeout
		return nil, pe
	}
	if detail, sentinel := classify(output); sentinel != nil {
		return nil, fail(sentinel, detail)
	}
	if res.Err != nil {
		var ee *exec.ExitError
		detail := errorLine(output)
		if errors.As(res.Err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				detail = strings.TrimPrefix(detail+"; ", "; ") + "killed by signal " + ws.Signal().String()
			}
		} else {
			detail = res.Err.Error()
		}
		return nil, fail(ErrExit, detail)
	}
	out, err := collect(p, outDir, includeRegex)
	if err != nil {
		var pe *PassError
		if errors.As(err, &pe) {
			pe.ExitCode, pe.Tail = exit, proc.LastLines(output, tailLines, nil)
		}
		return nil, err
	}
	return out, nil
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// collect finds and parses the CSV files a pass wrote under outDir. The
// layout depends on the SDK (outDir/kagent_<kind>.csv, or below a host or
// pid directory), so it globs recursively (reference/profilers.md b.3).
func collect(p Pass, outDir, includeRegex string) (*PassOutput, error) {
	var found, all []string
	err := filepath.WalkDir(outDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		all = append(all, filepath.Base(path))
		if strings.HasSuffix(d.Name(), p.outputSuffix()) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		return nil, &PassError{Pass: p.Name, Err: ErrNoOutput, Detail: err.Error()}
	}
	slices.Sort(found)
	if len(found) == 0 {
		detail := fmt.Sprintf("no *_%s under %s", p.outputSuffix(), outDir)
		if len(all) > 0 {
			detail += " (it holds " + strings.Join(firstN(all, 6), ", ") + ")"
		}
		return nil, &PassError{Pass: p.Name, Err: ErrNoOutput, Detail: detail}
	}
	out := &PassOutput{Files: found}
	var withRows []string
	for _, f := range found {
		n, err := parseInto(out, p, f)
		if err != nil && !errors.Is(err, ErrNoOutput) {
			return nil, &PassError{Pass: p.Name, Err: ErrParse, Detail: fmt.Sprintf("%s: %v", filepath.Base(f), err)}
		}
		if n > 0 {
			withRows = append(withRows, f)
		}
	}
	switch {
	case len(withRows) == 0:
		why := "the program dispatched no kernel, or the counters were not collected"
		if includeRegex != "" {
			why = fmt.Sprintf("no kernel matched --kernel-include-regex %q, or the counters were not collected", includeRegex)
		}
		return nil, &PassError{Pass: p.Name, Err: ErrNoOutput,
			Detail: fmt.Sprintf("%s has no rows: %s", strings.Join(baseNames(found), ", "), why)}
	case len(withRows) > 1:
		return nil, &PassError{Pass: p.Name, Err: ErrParse,
			Detail: fmt.Sprintf("dispatches from several processes (%s): the wrapper must run the candidate in one process", strings.Join(baseNames(withRows), ", "))}
	}
	// agent_info.csv is informational: a missing or odd one only costs
	// the clock-based VALU peak.
	if agents, _ := filepath.Glob(filepath.Join(filepath.Dir(withRows[0]), "*agent_info.csv")); len(agents) > 0 {
		if f, err := os.Open(agents[0]); err == nil {
			out.Agents, _ = ParseAgentInfo(f)
			f.Close()
		}
	}
	return out, nil
}

// parseInto parses one CSV file into out and returns its row count.
func parseInto(out *PassOutput, p Pass, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if p.IsTrace() {
		ds, err := ParseKernelTrace(f)
		if err != nil {
			return 0, err
		}
		if len(ds) > 0 {
			out.Dispatches = ds
		}
		return len(ds), nil
	}
	cs, err := ParseCounterCollection(f)
	if err != nil {
		return 0, err
	}
	if len(cs) > 0 {
		out.Counters = cs
	}
	return len(cs), nil
}

var (
	exceedsPattern    = regexp.MustCompile(`(?i)error code 3[78]\b|EXCEEDS_HW_LIMIT|exceeds the capabilities of the hardware`)
	permissionPattern = regexp.MustCompile(`(?i)could not be locked for profiling|lack of permissions|perf_event_paranoid`)
)

// permissionFix is the actionable part of an ErrPermission message.
const permissionFix = "allow counter access: set /proc/sys/kernel/perf_event_paranoid to 2 or less, " +
	"or run with CAP_PERFMON (or CAP_SYS_ADMIN); in a container add --cap-add PERFMON"

// classify recognises failures that need their own message, even when
// rocprofv3 exited 0 (older SDKs reported error 38 and carried on
// without counters).
func classify(output string) (detail string, sentinel error) {
	for _, line := range strings.Split(output, "\n") {
		if exceedsPattern.MatchString(line) {
			return clip(strings.TrimSpace(line)), ErrExceedsHWLimit
		}
	}
	for _, line := range strings.Split(output, "\n") {
		if permissionPattern.MatchString(line) {
			return clip(strings.TrimSpace(line)) + "; " + permissionFix, ErrPermission
		}
	}
	return "", nil
}

// errorLine is the last line of output that mentions an error (a Python
// traceback ends with the exception), else the last non-empty line.
func errorLine(output string) string {
	lines := strings.Split(strings.TrimRight(output, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.ToLower(lines[i])
		if strings.Contains(l, "error") || strings.Contains(l, "abort") || strings.Contains(l, "fatal") {
			return clip(strings.TrimSpace(lines[i]))
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return clip(s)
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:297] + "..."
	}
	return s
}

func firstN(ss []string, n int) []string {
	if len(ss) > n {
		return append(ss[:n:n], fmt.Sprintf("%d more", len(ss)-n))
	}
	return ss
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
