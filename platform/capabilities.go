package platform

import (
	"context"
	"time"
)

// The optional capabilities of a Session, every one in this file. A caller
// finds them by type assertion and does without where a session lacks one;
// worker sessions (cuda, rocm, xpu, cpu) have all of them.

// Comparer times two targets interleaved (A B A B ...) so that both see the
// same machine state.
type Comparer interface {
	Compare(ctx context.Context, a, b Target) (Timing, Timing, error)
}

// Accepter runs the acceptance gate: a candidate about to become the best is
// verified again in a fresh process on new draws.
type Accepter interface {
	Accept(ctx context.Context, c Candidate) (Verdict, error)
}

// ProblemInformer reports the loaded problem: its tensors, bytes and FLOPs
// (for the synthetic roofline) and the worker's memory plan.
type ProblemInformer interface {
	Info(ctx context.Context) (ProblemInfo, error)
}

// ProfilePreparer gets the profiler ready before the first profile, so that
// the profiler's start-up overlaps other work (worker sessions with ncu start
// the profiled process early). It returns at once.
type ProfilePreparer interface {
	PrepareProfile()
}

// ProfileStager starts a candidate's profile early where the rest of it can
// run alongside other work that times nothing (a run's acceptance gate): the
// profiled process loads the problem and warms the candidate up now, and the
// candidate's next Profile only runs the profiled call. The caller times
// nothing on the session's GPUs until that profile. It returns at once,
// false when nothing was staged. UnstageProfile ends whatever was staged (a
// staged process that is not to be profiled must not run beside the next
// gate).
type ProfileStager interface {
	StageProfile(ctx context.Context, c Candidate) bool
	UnstageProfile()
}

// ProfileEnder is told that the next profile is a run's last, so that its
// profiler starts nothing ahead after it (worker sessions with ncu).
type ProfileEnder interface {
	LastProfile()
}

// TensorInfo describes one input or output tensor.
type TensorInfo struct {
	Shape []int64 `json:"shape"`
	DType string  `json:"dtype"`
}

// ProblemInfo is what a worker reports of a loaded problem.
type ProblemInfo struct {
	ProblemID string       `json:"problem_id"`
	Inputs    []TensorInfo `json:"inputs"`
	Outputs   []TensorInfo `json:"outputs"`
	BytesIn   float64      `json:"bytes_in"`
	BytesOut  float64      `json:"bytes_out"`
	FLOPs     *float64     `json:"flops"`
	// FLOPsNote says how FLOPs were counted, or why they were not.
	FLOPsNote string `json:"flops_note"`
	TF32      string `json:"tf32"`
	// Memory is the worker's plan for the stored draws (nil: not planned).
	Memory *MemoryPlan `json:"memory,omitempty"`
}

// MemoryPlan says how many draws a worker stores and why (the worker's
// PROTOCOL.md, Memory): Note is empty when every requested draw fits.
// BufferSets is how many copies of the inputs each candidate's runner holds
// (MaxBufferSets for inputs that are not large) and KeptRunners how many
// runners the worker keeps between operations; both shrink for large inputs.
type MemoryPlan struct {
	Draws         int     `json:"draws"`
	NeedBytes     float64 `json:"need_bytes"`
	FreeBytes     float64 `json:"free_bytes"`
	Note          string  `json:"note"`
	BufferSets    int     `json:"buffer_sets"`
	MaxBufferSets int     `json:"max_buffer_sets"`
	KeptRunners   int     `json:"kept_runners"`
}

// Fingerprinter computes a candidate's code fingerprint without running its
// kernels, so that a rewrite whose code repeats an earlier candidate's is recorded as
// its duplicate instead of being verified and timed again.
type Fingerprinter interface {
	Fingerprint(ctx context.Context, c Candidate) (Fingerprint, error)
}

// Fingerprint identifies a candidate's code up to what cannot change what it
// runs (see the harness's fingerprint.py and PROTOCOL.md's fingerprint op).
type Fingerprint struct {
	// Hash is empty when none could be computed (Reason says why).
	Hash string `json:"hash"`
	// Method is how Hash was computed: "ast" (the normalised syntax tree of
	// the module) or "ttir" (the Triton IR of the launched kernels).
	Method string `json:"method"`
	// Kernels names the launched @triton.jit functions (ttir) or the
	// module's (ast).
	Kernels []string `json:"kernels,omitempty"`
	// Launches counts the launches of the fingerprinted call (ttir).
	Launches int `json:"launches,omitempty"`
	// Target is what the TTIR was compiled for ("cuda 90").
	Target string `json:"target,omitempty"`
	// Reason says why there is no hash, or why ast was used.
	Reason string `json:"reason,omitempty"`
}

// Screener ranks many variants of one kernel briefly, in one call: each is
// statically checked, called once on the first stored draw and compared
// with its reference, then timed with a few calls; the variants share one
// sandboxed process and their Triton compiles run at once (the harness's
// screen.py). A screening is a ranking, never a candidate's verdict or time:
// what a tuner picks from it is verified and timed in full before it can be
// promoted.
type Screener interface {
	Screen(ctx context.Context, cs []Candidate, o ScreenOptions) (ScreenReport, error)
}

// ScreenOptions sets a screening's budget (zero values: the harness's
// defaults, 20 timed calls after a 5 ms warm-up, one compile thread per
// core, at most 16).
type ScreenOptions struct {
	Calls    int
	WarmupMS float64
	Threads  int
	// HeldOut says which shapes the screen is at (HeldOutNone when empty).
	HeldOut string
}

// Which shapes a screen is at (ScreenOptions.HeldOut).
const (
	// HeldOutNone screens at the timed shape alone.
	HeldOutNone = "none"
	// HeldOutOnly screens every variant at the held-out shapes alone: each
	// Screening that passed has Shapes (none where the problem has no
	// held-out shapes) and no MedianMS.
	HeldOutOnly = "only"
)

// Screening is one variant's screen.
type Screening struct {
	ID      string `json:"id"`
	Passed  bool   `json:"passed"`
	Failure string `json:"failure,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// MedianMS is the median of the timed calls (Passed only).
	MedianMS float64   `json:"median_ms,omitempty"`
	TimesMS  []float64 `json:"times_ms,omitempty"`
	// Shapes are the screen times at the problem's held-out shapes, in the
	// problem's order (Passed only: a variant wrong at one fails the screen).
	Shapes []ShapeTime `json:"shapes,omitempty"`
}

// ShapeTime is a screen time at one held-out shape.
type ShapeTime struct {
	Label    string  `json:"label"`
	MedianMS float64 `json:"median_ms"`
}

// ScreenReport is a screening of several variants: one Screening per
// candidate, in order.
type ScreenReport struct {
	Results []Screening `json:"results"`
	// Method says how the variants were screened.
	Method string `json:"method"`
	// Compiled counts the kernel launches compiled ahead, on several threads.
	Compiled int `json:"compiled"`
	// Calls counts the worker calls the screening took (more than one when a
	// batch that hung or crashed the worker was split).
	Calls    int           `json:"calls"`
	Duration time.Duration `json:"duration_ns"`
	// Phases are the harness's seconds for loading, compiling and the whole
	// screen, summed over calls.
	Phases map[string]float64 `json:"phases,omitempty"`
}

// CompileAheader compiles the kernels of several candidates (knob variants
// of one kernel) in one call before any of them is verified: one sandboxed
// process loads them all and runs Triton's compiler on several threads, so
// that each candidate's own verification finds its kernels compiled. It is
// never a verdict: a candidate that does not load is left for its
// verification, and an error leaves every candidate to compile on its own.
type CompileAheader interface {
	CompileAhead(ctx context.Context, cs []Candidate) (CompileReport, error)
}

// CompileReport is what a CompileAhead did.
type CompileReport struct {
	// Loaded counts the candidates loaded, Compiled the kernel launches
	// compiled.
	Loaded   int `json:"loaded"`
	Compiled int `json:"compiled"`
	// Skipped says why nothing was compiled ("" when something may have
	// been), e.g. under Triton's interpreter.
	Skipped string `json:"skipped,omitempty"`
	// Error is the harness's account of a batch its process ended early.
	Error    string             `json:"error,omitempty"`
	Duration time.Duration      `json:"duration_ns"`
	Phases   map[string]float64 `json:"phases,omitempty"`
}
