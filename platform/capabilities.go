package platform

import "context"

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
