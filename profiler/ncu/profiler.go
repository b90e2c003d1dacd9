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
package ncu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/profiler/kernels"
	"github.com/kagent-dev/kagent/roofline"
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
	// Logger receives debug lines (nil = discard).
	Logger *slog.Logger
}

// Profiler profiles candidates of one problem with ncu. It is safe for
// concurrent use; profiles of the same GPU run one at a time.
type Profiler struct {
	cfg    Config
	runner *Runner
	seq    atomic.Int64
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
		NCU: cfg.NCUPath, Env: env, Timeout: cfg.Timeout, Logger: cfg.Logger,
	}}, nil
}

// Profile runs one call of the candidate under ncu and returns the
// metrics of its own kernels, aggregated over the call.
func (p *Profiler) Profile(ctx context.Context, c platform.Candidate) (roofline.Metrics, error) {
	dir := p.cfg.WorkDir
	if dir == "" {
		d, err := os.MkdirTemp("", "kagent-ncu-")
		if err != nil {
			return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	path := c.Path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	script, err := Wrapper{
		HarnessDir: p.cfg.HarnessDir, ProblemPath: p.cfg.ProblemPath, CandidatePath: path,
		Entry: p.cfg.Entry, DType: p.cfg.DType, Seeds: p.cfg.Seeds, TF32: p.cfg.TF32,
		ShapeOverride: p.cfg.ShapeOverride, Warmup: p.cfg.Warmup,
	}.Render()
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	scriptPath := filepath.Join(dir, fmt.Sprintf("ncu_wrapper_%s_%d.py", kernels.FileName(c.ID), p.seq.Add(1)))
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	defer os.Remove(scriptPath)

	filter := Filter{Names: kernels.Names(c.Source)}
	var warnings []string
	if len(filter.Names) == 0 {
		warnings = append(warnings, "no @triton.jit function found in the candidate: metrics cover every non-helper kernel of the call")
	}
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
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	launches := rep.Select(filter)
	if len(launches) == 0 {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w: kernels seen: %v, candidate's: %v", c.ID, ErrNoKernels, kernelNames(rep.Launches), filter.Names)
	}
	var missing []string
	for _, name := range run.Command.Metrics {
		if _, ok := rep.Units[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		warnings = append(warnings, "ncu did not report (unknown to this ncu or GPU): "+strings.Join(missing, ", "))
	}
	m, err := Aggregate(launches, run.Command.Metrics)
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	if len(rep.Launches) >= p.cfg.MaxLaunches {
		warnings = append(warnings, fmt.Sprintf("the call launched at least %d kernels: only the first %d were profiled", p.cfg.MaxLaunches, p.cfg.MaxLaunches))
	}
	m.Warnings = append(warnings, m.Warnings...)
	return m, nil
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
