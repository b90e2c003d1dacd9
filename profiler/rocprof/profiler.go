// Package rocprof profiles candidate kernels on AMD GPUs with rocprofv3
// (rocprofiler-sdk) and turns the counters into roofline metrics.
//
// One profile runs the caller's wrapper script five times under rocprofv3,
// each run its own process with its own timeout:
//
//  1. --kernel-trace: kernel times (End-Start, ns) per dispatch;
//  2. --pmc SQ counters (waves, VALU/SALU/VMEM/LDS instructions, the MFMA
//     counter of the dtype);
//  3. --pmc TCC_HIT_sum TCC_MISS_sum and the L2-to-memory requests;
//  4. --pmc FETCH_SIZE alone;
//  5. --pmc WRITE_SIZE alone.
//
// The counters are split so because combined groups hang or fail with
// error 38 (EXCEEDS_HW_LIMIT) on gfx942 (see DefaultPasses). Every pass
// writes CSV (--output-format csv) into its own directory; the parsers
// read kernel_trace.csv and counter_collection.csv by header name, keep the
// candidate's own Triton kernels (Filter) and the dispatches of the
// profiled call (Window), and join the passes on (kernel, ordinal in the
// call), never on Dispatch_Id. BuildMetrics derives time, bytes, memory
// SOL (achieved bandwidth), compute SOL (VALU and MFMA rates against
// peaks) and the L2 hit rate.
//
// If any pass fails -- a non-zero exit, error 38, a hang killed by its
// timeout, a missing or empty CSV, dispatches that do not line up -- the
// profile returns synthetic metrics (profiler/synthetic: the measured time
// and the bytes and FLOPs counted from the problem's tensors) with
// Metrics.Fallback naming the pass and the cause, and the Profiler stays
// in that mode: later profiles do not start rocprofv3 again.
//
// Nothing here has run on AMD hardware: the command lines, file layout,
// CSV columns and counter names follow ROCm's documentation and the
// rocprofiler-sdk sources (reference/profilers.md part b), and the tests
// run against CSV files and fake rocprofv3 executables built to them.
package rocprof

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/profiler/kernels"
	"github.com/kagent-kernels/kagent/profiler/synthetic"
	"github.com/kagent-kernels/kagent/roofline"
)

// platform_kwargs keys read by Config.ApplyKwargs.
const (
	// KwargBinPath is the rocprofv3 binary (a path or a name in PATH).
	KwargBinPath = "rocprof_bin_path"
	// KwargPassTimeout bounds each pass: a Go duration ("90s") or seconds.
	KwargPassTimeout = "rocprof_pass_timeout"
)

// Config sets up a Profiler for one GPU.
type Config struct {
	// BinPath is rocprof_bin_path ("" = rocprofv3 in PATH).
	BinPath string
	// Specs are the profiled GPU's facts: the bandwidth and peaks SOL is
	// computed against; Target ("gfx942") picks counter names.
	Specs roofline.Specs
	// PassTimeout bounds each pass without a Timeout of its own
	// (0 = DefaultPassTimeout). A pass runs the whole wrapper: Python and
	// torch start-up, Triton compilation (cached after the first pass),
	// warm-up and the profiled call.
	PassTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL to a pass's
	// process group (0 = DefaultKillGrace).
	KillGrace time.Duration
	// Passes are the counter passes (nil = DefaultPasses(Specs.Target,
	// the request's dtype)). The kernel-trace pass always runs first.
	Passes []Pass
	// WorkDir receives one output directory per profile ("" = the
	// system's temp dir); it is removed afterwards unless KeepOutput.
	WorkDir    string
	KeepOutput bool
	// Prepare turns a candidate into a Request (wrapper script, kernel
	// filter, window, synthetic inputs). Profile needs it; Run does not.
	Prepare func(ctx context.Context, c platform.Candidate) (Request, error)
	// Logger receives debug lines and fallback warnings (nil = discard).
	Logger *slog.Logger
	// After starts a pass's timeout timer (nil = time.After); tests pass
	// a fake clock's (proctest.Clock).
	After func(time.Duration) <-chan time.Time
	// Isolate builds each pass's command apart from kagent (Runner.Isolate;
	// nil = in kagent's environment).
	Isolate func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error)
}

// ApplyKwargs reads rocprof_bin_path and rocprof_pass_timeout from
// platform_kwargs; other keys are left to their owners.
func (c *Config) ApplyKwargs(kw map[string]string) error {
	if v, ok := kw[KwargBinPath]; ok {
		c.BinPath = strings.TrimSpace(v)
	}
	if v, ok := kw[KwargPassTimeout]; ok {
		v = strings.TrimSpace(v)
		d, err := time.ParseDuration(v)
		if err != nil {
			secs, err2 := strconv.ParseFloat(v, 64)
			if err2 != nil {
				return fmt.Errorf("read platform_kwargs.%s: %w: %q is neither a duration nor seconds", KwargPassTimeout, ErrConfig, v)
			}
			d = time.Duration(secs * float64(time.Second))
		}
		if d <= 0 {
			return fmt.Errorf("read platform_kwargs.%s: %w: %q is not positive", KwargPassTimeout, ErrConfig, v)
		}
		c.PassTimeout = d
	}
	return nil
}

// Request is one candidate to profile.
type Request struct {
	// ID names the candidate in logs and directory names.
	ID string
	// Wrapper is the program every pass runs.
	Wrapper Wrapper
	// Filter keeps the candidate's own kernels.
	Filter Filter
	// Window selects the profiled call among their dispatches.
	Window Window
	// DType picks the MFMA counter and its peak, and the peak of a
	// synthetic fallback ("" = Synthetic.Work's dtype).
	DType string
	// Synthetic is what the fallback is built from.
	Synthetic SyntheticInput
}

// SyntheticInput is what a synthetic roofline needs: the work counted from
// the problem's tensors and the candidate's measured time. When TimeMS is
// 0, a fallback after a successful kernel-trace pass uses the traced time.
type SyntheticInput struct {
	Work   synthetic.Work
	TimeMS float64
}

func (r Request) validate() error {
	if r.Wrapper.Script == "" {
		return fmt.Errorf("check request %s: %w: no wrapper script", r.ID, ErrConfig)
	}
	return r.Window.Validate()
}

func (r Request) dtype() string {
	if r.DType != "" {
		return roofline.CanonicalDType(r.DType)
	}
	return r.Synthetic.Work.DType()
}

// Profiler profiles candidates with rocprofv3 on one GPU. It is safe for
// concurrent use; profiles run one at a time. Once a profile has fallen
// back to the synthetic roofline, every later one does too, without
// starting rocprofv3 (see Fallback).
type Profiler struct {
	cfg    Config
	runner *Runner
	sem    chan struct{}

	mu       sync.Mutex
	fallback string
}

// New checks cfg and returns a Profiler. It does not look for rocprofv3;
// a profile reports ErrNotFound.
func New(cfg Config) (*Profiler, error) {
	if cfg.PassTimeout < 0 || cfg.KillGrace < 0 {
		return nil, fmt.Errorf("new rocprof profiler: %w: negative timeout", ErrConfig)
	}
	for _, p := range cfg.Passes {
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("new rocprof profiler: %w", err)
		}
		if p.IsTrace() {
			return nil, fmt.Errorf("new rocprof profiler: %w: pass %s has no counters", ErrConfig, p.Name)
		}
	}
	return &Profiler{
		cfg:    cfg,
		runner: &Runner{Bin: cfg.BinPath, KillGrace: cfg.KillGrace, Logger: cfg.Logger, After: cfg.After, Isolate: cfg.Isolate},
		sem:    make(chan struct{}, 1),
	}, nil
}

// Profile profiles a candidate: Config.Prepare builds its Request, Run
// does the rest.
func (p *Profiler) Profile(ctx context.Context, c platform.Candidate) (roofline.Metrics, error) {
	if p.cfg.Prepare == nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w: Config.Prepare is not set (use Run with a Request)", c.ID, ErrConfig)
	}
	req, err := p.cfg.Prepare(ctx, c)
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	if req.ID == "" {
		req.ID = c.ID
	}
	return p.Run(ctx, req)
}

// Run profiles one request: the kernel-trace pass, then the counter passes,
// then BuildMetrics. A failed pass gives synthetic metrics with Fallback
// set (and makes the Profiler sticky); an error is returned only for a
// bad request, a missing rocprofv3 binary (ErrNotFound), a cancelled ctx,
// or a fallback that cannot be built (no measured time).
func (p *Profiler) Run(ctx context.Context, req Request) (roofline.Metrics, error) {
	if err := req.validate(); err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", req.ID, err)
	}
	if reason := p.Fallback(); reason != "" {
		return p.synthetic(req, stickyReason(reason), 0)
	}
	if _, err := p.runner.Resolve(); err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", req.ID, err)
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return roofline.Metrics{}, fmt.Errorf("profile %s: wait for the profiler: %w", req.ID, ctx.Err())
	}
	defer func() { <-p.sem }()
	// Another profile may have fallen back while this one waited.
	if reason := p.Fallback(); reason != "" {
		return p.synthetic(req, stickyReason(reason), 0)
	}

	base := p.cfg.WorkDir
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "rocprof-"+kernels.FileName(req.ID)+"-")
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", req.ID, err)
	}
	if !p.cfg.KeepOutput {
		defer os.RemoveAll(dir)
	}
	m, traceMS, err := p.profile(ctx, req, dir)
	var pe *PassError
	if errors.As(err, &pe) {
		reason := pe.Reason()
		p.mu.Lock()
		if p.fallback == "" {
			p.fallback = reason
		}
		p.mu.Unlock()
		p.logger().Warn("rocprofv3 failed: synthetic roofline from now on", "candidate", req.ID,
			"reason", reason, "output_tail", pe.Tail)
		return p.synthetic(req, reason, traceMS)
	}
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", req.ID, err)
	}
	return m, nil
}

// Fallback is the reason the Profiler uses the synthetic roofline, or ""
// while it still runs rocprofv3.
func (p *Profiler) Fallback() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fallback
}

// Analyzer places this profiler's metrics on the roofline with rocprof's
// thresholds (at-roofline 85%, under-utilised 40%), fallbacks included.
func (p *Profiler) Analyzer() roofline.Analyzer { return NewAnalyzer(roofline.Config{}) }

// NewAnalyzer is a roofline analyzer whose zero thresholds take rocprof's
// defaults (roofline.DefaultConfig(Source)) whatever the metrics' source.
func NewAnalyzer(cfg roofline.Config) roofline.Analyzer {
	d := roofline.DefaultConfig(Source)
	if cfg.AtRooflinePct <= 0 {
		cfg.AtRooflinePct = d.AtRooflinePct
	}
	if cfg.UnderutilizedPct <= 0 {
		cfg.UnderutilizedPct = d.UnderutilizedPct
	}
	if cfg.TensorCorePct <= 0 {
		cfg.TensorCorePct = d.TensorCorePct
	}
	return roofline.Analyzer{Config: cfg}
}

// profile runs the passes. Pass failures are *PassError; traceMS is the
// call's traced kernel time once the kernel-trace pass has succeeded.
func (p *Profiler) profile(ctx context.Context, req Request, dir string) (m roofline.Metrics, traceMS float64, err error) {
	include := req.Filter.IncludeRegex()
	trace := Pass{Name: TracePassName}
	out, err := p.runner.Run(ctx, trace, p.timeout(trace), filepath.Join(dir, trace.dirName(0)), include, req.Wrapper)
	if err != nil {
		return m, 0, err
	}
	call, err := SelectDispatches(out.Dispatches, req.Filter, req.Window)
	if err != nil {
		return m, 0, &PassError{Pass: trace.Name, Err: ErrNoKernels, ExitCode: 0, Detail: err.Error()}
	}
	for _, d := range call {
		traceMS += float64(d.DurationNS()) / 1e6
	}

	passes := p.cfg.Passes
	if passes == nil {
		passes = DefaultPasses(p.cfg.Specs.Target, req.dtype())
	}
	counters := map[string]float64{}
	for i, pass := range passes {
		po, err := p.runner.Run(ctx, pass, p.timeout(pass), filepath.Join(dir, pass.dirName(i+1)), include, req.Wrapper)
		if err != nil {
			return m, traceMS, err
		}
		sel, err := SelectCounters(po.Counters, req.Filter, req.Window)
		if err != nil {
			return m, traceMS, &PassError{Pass: pass.Name, Err: ErrNoKernels, ExitCode: 0, Detail: err.Error()}
		}
		sum, err := Join(call, sel)
		if err != nil {
			return m, traceMS, &PassError{Pass: pass.Name, Err: ErrMismatch, ExitCode: 0, Detail: err.Error()}
		}
		for _, c := range pass.Counters {
			if _, ok := sum[c]; !ok {
				return m, traceMS, &PassError{Pass: pass.Name, Err: ErrNoOutput, ExitCode: 0,
					Detail: fmt.Sprintf("counter %s is missing from counter_collection.csv", c)}
			}
		}
		for k, v := range sum {
			counters[k] = v
		}
	}
	m = BuildMetrics(Call{Dispatches: call, Counters: counters, Agent: pickAgent(out.Agents, p.cfg.Specs.Target), DType: req.dtype()}, p.cfg.Specs)
	return m, traceMS, nil
}

func (p *Profiler) timeout(pass Pass) time.Duration {
	switch {
	case pass.Timeout > 0:
		return pass.Timeout
	case p.cfg.PassTimeout > 0:
		return p.cfg.PassTimeout
	}
	return DefaultPassTimeout
}

// synthetic builds the fallback metrics. traceMS stands in for a missing
// measured time.
func (p *Profiler) synthetic(req Request, reason string, traceMS float64) (roofline.Metrics, error) {
	t := req.Synthetic.TimeMS
	fromTrace := t <= 0 && traceMS > 0
	if fromTrace {
		t = traceMS
	}
	work := req.Synthetic.Work
	if work.PeakDType == "" && req.DType != "" {
		work.PeakDType = req.DType
	}
	m, err := synthetic.Metrics(work, t, reason)
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %s; synthetic fallback: %w", req.ID, reason, err)
	}
	if fromTrace {
		m.Warnings = append(m.Warnings, "time from rocprofv3's kernel trace of one call (no measured time was given)")
	}
	return m, nil
}

func stickyReason(first string) string {
	return "rocprofv3 not run: an earlier profile fell back to the synthetic roofline (" + first + ")"
}

// pickAgent is the agent of the profiled target, else the first GPU agent.
func pickAgent(agents []Agent, target string) *Agent {
	for i := range agents {
		if gfx(agents[i].Name) == gfx(target) {
			return &agents[i]
		}
	}
	if len(agents) > 0 {
		return &agents[0]
	}
	return nil
}

func (p *Profiler) logger() *slog.Logger {
	if p.cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.cfg.Logger
}

// Interface guards.
var (
	_ platform.Profiler         = (*Profiler)(nil)
	_ platform.RooflineAnalyzer = roofline.Analyzer{}
)
