// Package platform defines what kagent needs from a GPU vendor stack — verifying,
// timing and profiling candidate kernels, the GPU's specs and prompt guidance —
// and a registry through which platform packages make themselves available.
//
// Code outside platform/ uses this contract only: it opens a platform by name
// (Open, Lookup) and never imports an implementation package; a command links
// them all in through platform/all (internal/layering's tests hold to that).
//
// # Adding a platform
//
//  1. Create platform/<name>/<name>.go: a Name constant, a
//     New(cfg Config) (*Platform, error) constructor that works without the
//     registry, an init that calls platform.Register(Name, factory), and an
//     interface guards block. A GPU platform that runs candidates on warm
//     workers describes its vendor stack in a gpu.Stack (platform/gpu: probe,
//     GPU listing, the variable that pins a worker to one GPU, the torch
//     device) and forwards Open and Specs to it, as cuda, rocm and xpu do.
//  2. Blank-import it from platform/all (all.go).
//  3. Add its name to configs.PlatformNames in configs/validate.go (a GPU
//     platform also to configs.GPUPlatforms, the targets prompts are written
//     for); platform/all's test keeps the list and the registry equal. A
//     vendor's own spelling (KernelAgent's "nvidia", "amd", "intel") goes in
//     canonicalPlatform (configs/config.go).
//  4. Run the conformance suite from the package's own test,
//     conformance_test.go: platformtest.Run(t, p, task), or for a gpu.Stack
//     platform platformtest.RunGPU, which runs it on the CPU without the
//     device; a platform that starts workers also needs the sandbox's
//     TestMain (sandbox_main_test.go, calling sandbox.Main).
//  5. Teach Detect (detect.go) to recognise the machine, if it can be
//     auto-detected.
//  6. For a GPU platform: its GPUs' peaks in roofline/specs.yaml, and its
//     prompt guidance, prompts/templates/guidance_<name>.tmpl, with its Name
//     in prompts/prompts.go (Names) and a golden file from
//     `go test ./prompts -run TestGolden -update` after adding the target to
//     TestGolden's list.
package platform

import (
	"context"
	"log/slog"
	"time"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/roofline"
)

// Candidate is one kernel to verify, time or profile.
type Candidate struct {
	// ID names the candidate in logs, artifacts and the store (e.g. "r2c1").
	ID string
	// Path is the candidate's Python file on disk.
	Path string
	// Source is the file's contents (what Path holds).
	Source string
	// CutoffMS, when positive, lets a verification stop after a quick timing
	// of the loaded candidate slower than it: the verdict fails as
	// FailureSlower and no other check runs (a knob variant that cannot
	// beat the best is not worth them). Sessions that cannot time a
	// candidate before verifying it ignore it.
	CutoffMS float64
}

// FailureSlower is the verdict's failure when a verification with a cutoff
// stopped after a quick timing slower than it: the candidate was neither
// verified nor timed, so it is not an incorrect kernel.
const FailureSlower = "slower"

// Check is the outcome of one verification check.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	// Skipped is set when the check could not run here (reason says why).
	Skipped bool   `json:"skipped,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Verdict is the result of verifying one candidate. A candidate passes only if
// every check that ran passed.
type Verdict struct {
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
	// Failure names the first failed check; empty when Passed.
	Failure string `json:"failure,omitempty"`
	// Reason is the one-line reason of the first failure, fed back to the LLM.
	Reason string `json:"reason,omitempty"`
	// MaxAbsErr and RelL2 are the worst errors over all draws, when computed.
	MaxAbsErr float64 `json:"max_abs_err,omitempty"`
	RelL2     float64 `json:"rel_l2,omitempty"`
	// Launches counts Triton kernel launches seen during one call.
	Launches int `json:"launches,omitempty"`
	// TF32 states the TF32 policy both reference and candidate ran under.
	TF32     string        `json:"tf32,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Phases are the wall seconds of the verification's phases in the
	// worker (one per check, first_draw for the compiling first call), when
	// reported.
	Phases map[string]float64 `json:"phases,omitempty"`
	// TritonCompiles counts Triton's compiles in the candidate's own process
	// during a verification that passed, as that process reports them: a
	// diagnostic of where the time went, never a check.
	TritonCompiles *TritonCompiles `json:"triton_compiles,omitempty"`
	// QuickMS is the median of the quick timing a verification with a
	// cutoff ran before its checks (Candidate.CutoffMS), less the events'
	// own span; 0 when none ran. The runner's claim: a diagnostic of how the
	// quick timing compares with the full one, never a time of the kernel.
	QuickMS float64 `json:"quick_ms,omitempty"`
}

// TritonCompiles is what Triton's compiler did in one candidate's process.
type TritonCompiles struct {
	// Compiled counts the kernels compiled, CacheHits those found compiled
	// in the Triton cache.
	Compiled  int `json:"compiled"`
	CacheHits int `json:"cache_hits"`
	// Seconds is the time both took.
	Seconds float64 `json:"seconds"`
}

// TargetKind says what a Benchmarker times.
type TargetKind string

// Target kinds.
const (
	TargetKernel  TargetKind = "kernel"  // a candidate kernel
	TargetEager   TargetKind = "eager"   // the reference Model in PyTorch eager mode
	TargetCompile TargetKind = "compile" // the reference Model under torch.compile
)

// Target is something to time: a candidate, or one of the PyTorch baselines.
type Target struct {
	Kind      TargetKind
	Candidate Candidate // only for TargetKernel
	// Budget shortens the timing (nil: the session's full timing). A
	// session that honours it labels the Timing with Budget.Name; one that
	// ignores it times in full and leaves the label empty.
	Budget *Budget
}

// Budget is a screening timing budget: successive halving times many
// candidates briefly and only the survivors in full.
type Budget struct {
	// Name labels the timings taken with it ("screen 11%"); never empty.
	Name string
	// WarmupMS and RepMS replace the session's warm-up and measurement
	// budgets; MinReps its least number of timed calls (0: the session's).
	WarmupMS float64
	RepMS    float64
	MinReps  int
}

// Screening reports whether the time was taken with a screening budget.
func (t Timing) Screening() bool { return t.Budget != "" }

// Label names the target in tables.
func (t Target) Label() string {
	if t.Kind == TargetKernel && t.Candidate.ID != "" {
		return t.Candidate.ID
	}
	return string(t.Kind)
}

// Timing is a timed target. Times are in milliseconds.
type Timing struct {
	Target   string    `json:"target"`
	MedianMS float64   `json:"median_ms"`
	P20MS    float64   `json:"p20_ms"`
	P80MS    float64   `json:"p80_ms"`
	MeanMS   float64   `json:"mean_ms"`
	CV       float64   `json:"cv"`
	N        int       `json:"n"`
	TimesMS  []float64 `json:"times_ms,omitempty"`
	// Representative is false when the timing is not meaningful for GPU
	// performance (the cpu platform).
	Representative bool `json:"representative"`
	// Method describes how the time was taken (e.g. "cuda events, L2 flush 120 MiB, 3 input sets").
	Method string `json:"method,omitempty"`
	// Budget names the screening budget the time was taken with (Budget.Name);
	// empty for the full timing, the only one a candidate is promoted on.
	Budget string `json:"budget,omitempty"`
	// Unavailable is set when the target cannot be timed here (torch.compile missing).
	Unavailable string `json:"unavailable,omitempty"`
	// HostMS is the median host time to enqueue one timed call (from its
	// start event to its end event; 0 when unknown).
	HostMS float64 `json:"host_ms,omitempty"`
	// Unseen is the unseen-input check of a kernel's timing: calls on new
	// draws, held to the timed median (nil when it did not run).
	Unseen *UnseenCheck `json:"unseen_inputs,omitempty"`
	// Clock names what timed the calls: ClockProfiler, ClockDevice,
	// ClockEvents or ClockCPU ("" when unknown).
	Clock string `json:"clock,omitempty"`
	// LateCalls counts the timed calls the host enqueued after the spin
	// ahead of them had ended (ClockDevice and ClockProfiler): their spans may hold host
	// time.
	LateCalls int `json:"late_calls,omitempty"`
	// Phases are the wall seconds of the timing's phases in the worker
	// (prepare, timed, recheck, host_check, unseen_inputs), when reported.
	Phases map[string]float64 `json:"phases,omitempty"`
	// TimedParts says where the timed phase went (a candidate timed in its
	// runner: timed_requests, rechecks, inputs_intact), when reported.
	TimedParts map[string]float64 `json:"timed_parts,omitempty"`
	// BracketMS is the events' own span, subtracted from every call's
	// event span (ClockDevice on NVIDIA; 0 when nothing was subtracted), and
	// EventMedianMS the median span before it was.
	BracketMS     float64 `json:"bracket_ms,omitempty"`
	EventMedianMS float64 `json:"event_median_ms,omitempty"`
}

// Clocks of a Timing.
const (
	// ClockDevice: device events around each call, after a spin kernel that
	// keeps the device busy while the host enqueues the call; the host's
	// launch time is outside the span. On NVIDIA (with the hold that fills
	// every SM) the events' own span (two events with nothing between them,
	// after the same hold) is subtracted (Timing.BracketMS).
	ClockDevice = "device"
	// ClockProfiler: each call's own device work (kernels, copies, fills),
	// first start to last end, from the CUDA profiling interface's records,
	// after the same spin (KAGENT_TIMING_CLOCK=profiler): neither the host's
	// launch time nor the events' own overhead is in it.
	ClockProfiler = "profiler"
	// ClockEvents: device events around each call with no spin ahead; a
	// call the host enqueues slowly leaves the device idle inside its span.
	ClockEvents = "events"
	// ClockCPU: the process's CPU time (the cpu platform).
	ClockCPU = "cpu"
)

// LateShare: a device-clock timing with more than this share of late calls
// is host-bound.
const LateShare = 0.1

// UnseenCheck is what the unseen-input check measured: one call on each
// new draw against LimitMS (from the timed median); Skipped says why it did
// not run where it could not.
type UnseenCheck struct {
	TimesMS []float64 `json:"times_ms,omitempty"`
	LimitMS float64   `json:"limit_ms,omitempty"`
	Skipped string    `json:"skipped,omitempty"`
}

// HostBoundShare: a GPU timing whose host time per call is at least this
// share of its median is host-bound (HostBound).
const HostBoundShare = 0.8

// HostBound reports whether the device may have waited for the host inside
// the measured spans: the time then includes host overhead and moves with
// the host's load (small kernels behind a slow Python path, e.g. a
// torch.compile wrapper).
//
// With the device clock the host's launch time is outside the spans unless
// a call was enqueued after the spin ahead of it ended: such a timing is
// host-bound only when more than LateShare of its calls were late.
func (t Timing) HostBound() bool {
	if !t.Representative || t.MedianMS <= 0 {
		return false
	}
	if t.Clock == ClockDevice || t.Clock == ClockProfiler {
		return t.N > 0 && float64(t.LateCalls) > LateShare*float64(t.N)
	}
	return t.HostMS > 0 && t.HostMS >= HostBoundShare*t.MedianMS
}

// ClockLabel says in a few words what timed t, for reports.
func (t Timing) ClockLabel() string {
	switch t.Clock {
	case ClockDevice:
		if t.BracketMS > 0 {
			return "device-side (events after a spin, less their own span)"
		}
		return "device-side (events after a spin)"
	case ClockProfiler:
		return "device-side (the call's own kernels, from the profiler's records)"
	case ClockEvents:
		return "events (host launch time may be inside)"
	case ClockCPU:
		return "process CPU time"
	}
	return ""
}

// Profiler measures hardware metrics of a candidate.
type Profiler interface {
	Profile(ctx context.Context, c Candidate) (roofline.Metrics, error)
}

// Verifier checks a candidate against the reference.
type Verifier interface {
	Verify(ctx context.Context, c Candidate) (Verdict, error)
}

// Benchmarker times candidates and baselines.
type Benchmarker interface {
	Time(ctx context.Context, t Target) (Timing, error)
}

// RooflineAnalyzer places metrics on the roofline of a GPU.
type RooflineAnalyzer interface {
	Analyze(m roofline.Metrics, s roofline.Specs) roofline.Result
}

// SessionInfo is what a session knows of where its candidates run.
type SessionInfo struct {
	// Device is the device's name as the worker reported it ("" where
	// nothing runs).
	Device string
	// Isolation says how candidates are kept apart from their judge ("" where
	// nothing runs).
	Isolation string
	// Specs are the GPU's specs as the session resolved them for its device
	// (zero: ask Platform.Specs; see SpecsOf).
	Specs roofline.Specs
	// Runtime is set where a worker reported the Python stack it runs:
	// Torch its torch version, Triton its triton version ("" where it
	// cannot import triton).
	Runtime       bool
	Torch, Triton string
}

// Session is a platform bound to one kernel dir: the verifier, benchmarker and
// profiler all refer to that problem. Close releases workers and files.
type Session interface {
	Verifier
	Benchmarker
	Profiler
	// About says where the session's candidates run.
	About() SessionInfo
	// Floor is the problem's time floor on the session's device, in ms: its
	// bytes and FLOPs against the device's peaks. An error where the session
	// cannot tell (no device, no peaks, no sizes).
	Floor(ctx context.Context) (float64, error)
	Close() error
}

// SpecsOf is the GPU specs of a session's device, or the platform's where the
// session resolved none.
func SpecsOf(ctx context.Context, p Platform, s Session) (roofline.Specs, error) {
	if s != nil {
		if specs := s.About().Specs; specs.Name != "" {
			return specs, nil
		}
	}
	return p.Specs(ctx)
}

// Platform is one vendor stack.
type Platform interface {
	// Name is the registry name ("cuda", "rocm", ...).
	Name() string
	// Open binds the platform to a kernel dir, starting whatever it needs.
	Open(ctx context.Context, task *kerneldir.Task) (Session, error)
	// Specs returns the facts of the GPU this platform runs on.
	Specs(ctx context.Context) (roofline.Specs, error)
	// Analyzer returns the roofline analyzer for this platform's metrics.
	Analyzer() RooflineAnalyzer
	// Executes reports whether the platform really runs kernels (false for noop).
	Executes() bool
}

// Config is what a platform factory receives.
type Config struct {
	// Python is the interpreter that runs the harness ("" = find python3).
	Python string
	// GPUName overrides the detected device name for the specs lookup.
	GPUName string
	// SpecsFile is an optional YAML file of extra or overriding GPU specs.
	SpecsFile string
	// Kwargs holds platform-specific settings (platform_kwargs in YAML).
	Kwargs map[string]string
	// NCUPath is the Nsight Compute binary (ncu_bin_path).
	NCUPath string
	// NCUMetrics is what an Nsight Compute profile collects
	// (profile_metrics: "full" or "", every metric; "roofline", the time,
	// DRAM bytes and FLOP counters only).
	NCUMetrics string
	// Timeouts for worker operations.
	VerifyTimeout  time.Duration
	BenchTimeout   time.Duration
	ProfileTimeout time.Duration
	// WarmupMS and RepMS are the time budgets of warm-up and measurement.
	WarmupMS float64
	RepMS    float64
	// WorkDir is where the platform may write scratch files (the run dir).
	WorkDir string
	// Logger receives the sessions' warnings and debug lines: workers
	// replaced, a sandbox that could not be set up, the profiler's
	// (nil = discard).
	Logger *slog.Logger
}
