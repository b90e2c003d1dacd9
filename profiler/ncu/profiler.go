// Package ncu profiles candidate kernels with NVIDIA Nsight Compute.
//
// A profile renders a wrapper script (wrapper.py.tmpl) that builds the
// problem's inputs and the candidate's callable through the harness, warms
// the candidate up (Triton compiles and autotunes outside the profiled
// range) and runs one call inside cudaProfilerStart/Stop and an NVTX
// range. ncu runs that script with --profile-from-start off (see Mark),
// --clock-control none and a targeted metric set: the 29 metrics
// KernelAgent collects plus kernel time, DRAM bytes and FLOP counters. The
// CSV is filtered to the candidate's own Triton kernels by name (PyTorch
// and library helper kernels dropped) and aggregated over the call's
// launches into roofline.Metrics.
//
// With Config.Ahead, the next profile's process is started before it is
// needed (Profiler.Prestart, and after every profile): the wrapper imports
// torch, Triton and the harness and waits for a job file naming the
// candidate, so that its start-up overlaps other work. Runner.Start and
// Pending.Finish run such a process; the GPU lock is taken only when the
// job is handed over. Profiler.Stage hands a candidate to that process
// early: it builds the inputs and warms the candidate up at once, and the
// candidate's Profile only runs the profiled call.
//
// With Config.Isolate, ncu and the profiled program run in an OS sandbox
// (the platform's, platform/worker.ProfileSandbox) that shows them the
// profile's own folder, with a copy of the candidate, as the one place
// they may write; Probe profiles a call of kagent's own there, so that a
// platform can tell whether ncu works in its sandbox before any candidate
// runs in it.
package ncu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/profiler/kernels"
	"github.com/kagent-kernels/kagent/roofline"
)

// Config sets up a Profiler for one problem on one GPU.
type Config struct {
	// NCUPath is ncu_bin_path ("" = ncu in PATH, then /usr/local/cuda/bin/ncu).
	NCUPath string
	// Python is the interpreter that runs the wrapper ("" = python3).
	Python string
	// HarnessDir holds the kagent_harness package.
	HarnessDir string
	// ProblemPath is the problem.py of the kernel dir.
	ProblemPath string
	// Entry, DType, Seeds, TF32 and ShapeOverride build the inputs and the
	// callable as the verifier does (see Wrapper).
	Entry         string
	DType         string
	Seeds         []int64
	TF32          string
	ShapeOverride map[string]any
	// GPU is the CUDA_VISIBLE_DEVICES value and the lock key ("" = as inherited).
	GPU string
	// WorkDir receives the wrapper scripts and logs ("" = a temp dir).
	WorkDir string
	// Timeout bounds one profile (0 = DefaultTimeout).
	Timeout time.Duration
	// Warmup is the number of calls before the profiled one (0 = 3).
	Warmup int
	// Mark selects the profiled call ("" = MarkRange).
	Mark Mark
	// MaxLaunches caps profiled launches per call (0 = 256).
	MaxLaunches int
	// Metrics to collect (nil = DefaultMetrics()).
	Metrics []string
	// Env is added to the program's environment (TRITON_CACHE_DIR, ...).
	Env []string
	// Device is the harness's device kind ("" = cuda).
	Device string
	// Ahead starts the next profile's process before it is needed
	// (Prestart, and after every profile once Prestart was called): its
	// Python, torch and Triton
	// imports and ncu's start then overlap other work. That process
	// touches no GPU until its profile and profiles every kernel of the
	// marked call (the candidate, hence ncu's kernel filter, is not known
	// yet); the candidate's own kernels are selected afterwards as usual.
	Ahead bool
	// IdleSeconds is how long a process started ahead waits for its
	// profile before it exits (0 = 600).
	IdleSeconds int
	// Isolate builds the command that runs ncu and the profiled program
	// apart from kagent: in an OS sandbox that shows Python, the harness
	// and the problem's files read-only and the profile's own folder (which
	// gets a copy of the candidate) as the one it may write, or at least
	// with a scrubbed environment. nil: as kagent's child, in kagent's
	// environment.
	Isolate Isolator
	// Logger receives debug lines (nil = discard).
	Logger *slog.Logger
}

// KwargAhead is the platform_kwargs key that sets Config.Ahead: "true" or
// "false" ("auto", or no key: on when the machine has at least 4 CPUs, so
// that the early start's imports do not compete with the timing loop for
// a core).
const KwargAhead = "ncu_ahead"

// AheadFromKwargs reads KwargAhead; cpus is the machine's CPU count.
func AheadFromKwargs(kw map[string]string, cpus int) (bool, error) {
	v := strings.ToLower(strings.TrimSpace(kw[KwargAhead]))
	switch v {
	case "", "auto":
		return cpus >= 4, nil
	case "true", "yes", "1", "on":
		return true, nil
	case "false", "no", "0", "off":
		return false, nil
	}
	return false, fmt.Errorf("read platform_kwargs.%s: %w: %q is not true, false or auto", KwargAhead, ErrConfig, v)
}

// KwargSandbox is the platform_kwargs key that says where profiles run:
// "auto" (no key) in the runners' OS sandbox where a probe shows that ncu
// works there, else outside it; "on" always in it (a profile that fails
// there leaves the candidate on the synthetic roofline); "off" outside.
const KwargSandbox = "ncu_sandbox"

// Sandbox settings (KwargSandbox).
const (
	SandboxAuto = "auto"
	SandboxOn   = "on"
	SandboxOff  = "off"
)

// SandboxFromKwargs reads KwargSandbox.
func SandboxFromKwargs(kw map[string]string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(kw[KwargSandbox])); v {
	case "", SandboxAuto:
		return SandboxAuto, nil
	case SandboxOn, "true", "yes", "1":
		return SandboxOn, nil
	case SandboxOff, "false", "no", "0":
		return SandboxOff, nil
	default:
		return "", fmt.Errorf("read platform_kwargs.%s: %w: %q is not auto, on or off", KwargSandbox, ErrConfig, v)
	}
}

// Profiler profiles candidates of one problem with ncu. It is safe for
// concurrent use; profiles of the same GPU run one at a time.
type Profiler struct {
	cfg    Config
	runner *Runner
	seq    atomic.Int64

	mu      sync.Mutex
	ahead   *ahead // the process started ahead, if any
	noAhead string // why starting ahead was turned off ("" = it is not)
	asked   bool   // Prestart was called: profiles start the next one ahead
	closed  bool
}

// New checks cfg and returns a Profiler. It does not look for ncu yet, so a
// machine without ncu can still build one; Profile reports ErrNotFound.
func New(cfg Config) (*Profiler, error) {
	if cfg.HarnessDir == "" || cfg.ProblemPath == "" {
		return nil, fmt.Errorf("new ncu profiler: %w: harness dir and problem path are required", ErrConfig)
	}
	if cfg.Python == "" {
		cfg.Python = "python3"
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = 3
	}
	if cfg.MaxLaunches <= 0 {
		cfg.MaxLaunches = 256
	}
	if cfg.Metrics == nil {
		cfg.Metrics = DefaultMetrics()
	}
	if _, err := (Command{Metrics: cfg.Metrics, Mark: cfg.Mark, Program: []string{"x"}}).Args(); err != nil {
		return nil, fmt.Errorf("new ncu profiler: %w", err)
	}
	env := append([]string{"PYTHONUNBUFFERED=1"}, cfg.Env...)
	return &Profiler{cfg: cfg, runner: &Runner{
		NCU: cfg.NCUPath, Env: env, Timeout: cfg.Timeout, Logger: cfg.Logger, Isolate: cfg.Isolate,
	}}, nil
}

// Metrics are the metrics its profiles ask ncu for.
func (p *Profiler) Metrics() []string { return slices.Clone(p.cfg.Metrics) }

// Wrapper is the wrapper script of this profiler's problem, less the
// candidate (each profile names its own).
func (p *Profiler) Wrapper() Wrapper {
	return Wrapper{
		HarnessDir: p.cfg.HarnessDir, ProblemPath: p.cfg.ProblemPath, Entry: p.cfg.Entry,
		DType: p.cfg.DType, Seeds: p.cfg.Seeds, TF32: p.cfg.TF32, ShapeOverride: p.cfg.ShapeOverride,
		Device: p.cfg.Device, Warmup: p.cfg.Warmup, IdleSeconds: p.cfg.IdleSeconds,
	}
}

// Close ends the process started ahead, if any; later profiles start their
// own. It is idempotent.
func (p *Profiler) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.dropAhead()
	return nil
}

func (p *Profiler) logger() *slog.Logger {
	if p.cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.cfg.Logger
}

// Profile runs one call of the candidate under ncu and returns the
// metrics of its own kernels, aggregated over the call. It uses the
// process started ahead when there is one; if that fails, the profile runs
// again in a fresh process, with ncu's kernel filter, and this profiler
// starts no more processes ahead (a profiled candidate has passed
// verification, so such a failure is most likely the way ahead's).
func (p *Profiler) Profile(ctx context.Context, c platform.Candidate) (roofline.Metrics, error) {
	defer func() {
		if ctx.Err() == nil {
			p.mu.Lock()
			p.startNext()
			p.mu.Unlock()
		}
	}()
	path := c.Path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	filter := Filter{Names: kernels.Names(c.Source)}
	var warnings []string
	if len(filter.Names) == 0 {
		warnings = append(warnings, "no @triton.jit function found in the candidate: metrics cover every non-helper kernel of the call")
	}
	var rep *Report
	var launches []Launch
	var err error
	metrics := p.cfg.Metrics
	if a := p.takeAhead(c); a != nil {
		rep, err = p.profileAhead(ctx, a, path)
		if err == nil {
			if launches = rep.Select(filter); len(launches) == 0 {
				err = fmt.Errorf("%w: kernels seen: %v, candidate's: %v", ErrNoKernels, kernelNames(rep.Launches), filter.Names)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
			}
			p.mu.Lock()
			p.noAhead = firstLine(err.Error())
			p.mu.Unlock()
			p.logger().Warn("ncu: the profile's process started ahead failed; profiling in a fresh one and no longer starting ahead",
				"candidate", c.ID, "err", err)
			rep = nil
		}
	}
	if rep == nil {
		rep, metrics, warnings, err = p.profileFresh(ctx, c, path, filter, warnings)
		if err != nil {
			return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
		}
		if launches = rep.Select(filter); len(launches) == 0 {
			return roofline.Metrics{}, fmt.Errorf("profile %s: %w: kernels seen: %v, candidate's: %v", c.ID, ErrNoKernels, kernelNames(rep.Launches), filter.Names)
		}
	}
	var missing []string
	for _, name := range metrics {
		if _, ok := rep.Units[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		warnings = append(warnings, "ncu did not report (unknown to this ncu or GPU): "+strings.Join(missing, ", "))
	}
	passes, saved := replayCost(launches)
	p.logger().Info("ncu profile", "candidate", c.ID, "wrapper", rep.Phases, "after_program", rep.AfterProgram.Round(time.Millisecond),
		"replay_passes", passes, "bytes_saved", saved)
	m, err := Aggregate(launches, metrics)
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	if len(rep.Launches) >= p.cfg.MaxLaunches {
		warnings = append(warnings, fmt.Sprintf("the call launched at least %d kernels: only the first %d were profiled", p.cfg.MaxLaunches, p.cfg.MaxLaunches))
	}
	m.Warnings = append(warnings, m.Warnings...)
	return m, nil
}

// profileFresh renders the wrapper for the candidate and runs ncu on it,
// with ncu's kernel filter set to the candidate's kernels. It returns the
// report and the metrics that ncu accepted.
func (p *Profiler) profileFresh(ctx context.Context, c platform.Candidate, path string, filter Filter, warnings []string) (*Report, []string, []string, error) {
	dir := p.cfg.WorkDir
	if dir == "" || p.cfg.Isolate != nil {
		// A sandboxed profile may write its folder: one of its own.
		d, err := os.MkdirTemp(dir, "kagent-ncu-")
		if err != nil {
			return nil, nil, warnings, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	path, err := p.visibleCandidate(path, dir)
	if err != nil {
		return nil, nil, warnings, err
	}
	w := p.Wrapper()
	w.CandidatePath = path
	script, err := w.Render()
	if err != nil {
		return nil, nil, warnings, err
	}
	scriptPath := filepath.Join(dir, fmt.Sprintf("ncu_wrapper_%s_%d.py", kernels.FileName(c.ID), p.seq.Add(1)))
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		return nil, nil, warnings, err
	}
	defer os.Remove(scriptPath)
	run := Run{GPU: p.cfg.GPU, Dir: dir, Command: Command{
		Metrics: p.cfg.Metrics, KernelRegex: filter.NCURegex(), Mark: p.cfg.Mark,
		MaxLaunches: p.cfg.MaxLaunches, Program: []string{p.cfg.Python, scriptPath},
	}}
	rep, err := p.runner.Run(ctx, run)
	if errors.Is(err, ErrUnknownMetric) {
		if fewer := withoutOptional(run.Command.Metrics); len(fewer) < len(run.Command.Metrics) {
			var re *RunError
			errors.As(err, &re)
			warnings = append(warnings, "ncu rejected a tensor-path FLOP counter; profiled without them: "+re.Detail)
			run.Command.Metrics = fewer
			rep, err = p.runner.Run(ctx, run)
		}
	}
	return rep, run.Command.Metrics, warnings, err
}

// visibleCandidate is the candidate's file as the profiled program sees it:
// path itself, or in a sandbox (Config.Isolate), a copy in the profile's
// folder dir, the only one of the run's folders the sandbox shows.
func (p *Profiler) visibleCandidate(path, dir string) (string, error) {
	if p.cfg.Isolate == nil {
		return path, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("copy the candidate into the profile's sandbox: %w", err)
	}
	sub, err := os.MkdirTemp(dir, "candidate-")
	if err != nil {
		return "", fmt.Errorf("copy the candidate into the profile's sandbox: %w", err)
	}
	copyPath := filepath.Join(sub, filepath.Base(path))
	if err := os.WriteFile(copyPath, src, 0o644); err != nil {
		return "", fmt.Errorf("copy the candidate into the profile's sandbox: %w", err)
	}
	return copyPath, nil
}

// replayCost is what kernel replay cost the profiled launches: the passes
// summed over them, and the most bytes of device memory ncu saved for one
// (it saves all memory the launch could access, and restores it before
// every pass after the first). Both are 0 where ncu did not report them.
func replayCost(ls []Launch) (passes int, savedBytes float64) {
	for _, l := range ls {
		passes += int(l.Values["profiler__replayer_passes"])
		savedBytes = max(savedBytes, l.Values["profiler__replayer_bytes_mem_backed_up.sum"])
	}
	return passes, savedBytes
}

// firstLine is the first line of s.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func kernelNames(ls []Launch) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range ls {
		if !seen[l.Kernel] {
			seen[l.Kernel] = true
			out = append(out, l.Kernel)
		}
	}
	return out
}

// Interface guards.
var _ platform.Profiler = (*Profiler)(nil)
