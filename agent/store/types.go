package store

import (
	"encoding/json"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// RunStatus is where a run stands.
type RunStatus string

// Run statuses.
const (
	RunRunning     RunStatus = "running"     // started and not finished (or killed: see ResumeState)
	RunFinished    RunStatus = "finished"    // the loop ended normally (a stop rule fired)
	RunFailed      RunStatus = "failed"      // the loop ended on an error
	RunInterrupted RunStatus = "interrupted" // the loop was stopped (SIGINT, budget cut) and may be resumed
)

func (s RunStatus) valid() bool {
	switch s {
	case RunRunning, RunFinished, RunFailed, RunInterrupted:
		return true
	}
	return false
}

// Status is where a candidate stands in the pipeline
// proposed → verified → timed → profiled; rejected and failed end it early.
type Status string

// Candidate statuses.
const (
	StatusProposed Status = "proposed" // source recorded, not yet verified
	StatusVerified Status = "verified" // passed verification, not yet timed
	StatusRejected Status = "rejected" // failed a check (the verdict names it); final
	StatusTimed    Status = "timed"    // timed, not yet profiled
	StatusProfiled Status = "profiled" // metrics and roofline recorded; final
	StatusFailed   Status = "failed"   // a step could not complete (Error says why); final
)

// Statuses lists every candidate status in pipeline order.
var Statuses = []Status{StatusProposed, StatusVerified, StatusRejected, StatusTimed, StatusProfiled, StatusFailed}

// Measured reports whether a candidate in this status holds a usable timing:
// it is eligible as the run's best and is never timed again.
func (s Status) Measured() bool { return s == StatusTimed || s == StatusProfiled }

// Run is one optimisation run of one kernel dir.
type Run struct {
	ID         string `json:"id"`
	KernelDir  string `json:"kernel_dir"`
	Problem    string `json:"problem"`
	Strategy   string `json:"strategy"`
	Platform   string `json:"platform"`
	Device     string `json:"device"`
	ConfigYAML string `json:"config_yaml,omitempty"`
	// InputID is the id of the round-0 candidate that holds the input kernel
	// ("input" when CreateRun is given none); its timing is Baselines.Input.
	InputID    string    `json:"input_id"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"` // zero until FinishRun
	Status     RunStatus `json:"status"`
	StopReason string    `json:"stop_reason,omitempty"`
	// BestID is the candidate the loop last promoted with SetBest ("" none).
	BestID    string    `json:"best_id,omitempty"`
	Baselines Baselines `json:"baselines"`
	// Resumes counts ReopenRun calls.
	Resumes int `json:"resumes"`
}

// Baselines are the reference times of a run: PyTorch eager, torch.compile and
// the input kernel (the timing of the candidate Run.InputID). Nil: not timed yet.
type Baselines struct {
	Eager   *platform.Timing `json:"eager,omitempty"`
	Compile *platform.Timing `json:"compile,omitempty"`
	Input   *platform.Timing `json:"input,omitempty"`
}

// Round is one round of a run. Round 0 holds the input kernel.
type Round struct {
	RunID      string    `json:"run_id"`
	Index      int       `json:"index"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"` // zero while open
	// State is what the strategy needs to resume after this round (beam
	// contents, plateau counter), as the loop wrote it in FinishRound.
	State json.RawMessage `json:"state,omitempty"`
}

// Finished reports whether FinishRound was called for the round.
func (r Round) Finished() bool { return !r.FinishedAt.IsZero() }

// Candidate is one kernel source and what became of it.
type Candidate struct {
	RunID string `json:"run_id"`
	// ID is unique within its run (e.g. "r2c1"); another run may reuse it.
	ID    string `json:"id"`
	Round int    `json:"round"`
	// Slot is the slot of its round the candidate fills (its refinements
	// share it); 0 for the input.
	Slot int `json:"slot,omitempty"`
	// ParentID is the candidate this one was derived from ("" for the input).
	ParentID string `json:"parent_id,omitempty"`
	// Inspirations are further kernels the proposal was shown with its
	// parent (none from the shipped strategies).
	Inspirations []string `json:"inspirations,omitempty"`
	// Bottleneck is the 1-based rank of the bottleneck direction the rewrite
	// targeted (0: none, e.g. the input or a tune candidate); Direction says
	// it in words.
	Bottleneck int    `json:"bottleneck,omitempty"`
	Direction  string `json:"direction,omitempty"`
	// RefineOf is the rejected candidate this one repairs ("" for a first
	// attempt); RefineAttempt counts repairs (0 for a first attempt).
	RefineOf      string `json:"refine_of,omitempty"`
	RefineAttempt int    `json:"refine_attempt,omitempty"`
	Source        string `json:"source"`
	// SourceHash is SourceHash(Source), computed by AddCandidate.
	SourceHash string            `json:"source_hash"`
	Status     Status            `json:"status"`
	Verdict    *platform.Verdict `json:"verdict,omitempty"`
	Timing     *platform.Timing  `json:"timing,omitempty"`
	Metrics    *roofline.Metrics `json:"metrics,omitempty"`
	Roofline   *roofline.Result  `json:"roofline,omitempty"`
	// Error says why a step failed (status failed).
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MedianMS is the candidate's median time, or 0 when it has no timing.
func (c Candidate) MedianMS() float64 {
	if c.Timing == nil {
		return 0
	}
	return c.Timing.MedianMS
}

// Update is the result of one pipeline step, written by UpdateCandidate. Each
// target status takes its own result and nothing else:
//
//	verified  Verdict (passed)            from proposed
//	rejected  Verdict (not passed)        from proposed, verified, timed, profiled
//	timed     Timing                      from verified
//	profiled  Metrics, optional Roofline  from timed
//	failed    Error                       from proposed, verified, timed
//
// A later verdict replaces an earlier one (a timed candidate rejected by the
// physical-limit check keeps its timing and gets the failing verdict).
type Update struct {
	Status   Status
	Verdict  *platform.Verdict
	Timing   *platform.Timing
	Metrics  *roofline.Metrics
	Roofline *roofline.Result
	Error    string
}

// EventProblem is the kind of the event in which the loop records the
// SHA-256 of the problem.py (and test.py) a run judges against; its data is
// ProblemPin.
const EventProblem = "agent.problem"

// ProblemPin is the data of an EventProblem event.
type ProblemPin struct {
	Problem string `json:"problem_sha256"`
	Test    string `json:"test_sha256,omitempty"`
}

// NoRound marks an LLM call or event that belongs to no round.
const NoRound = -1

// LLMCall is one model call, successful or not.
type LLMCall struct {
	ID    int64  `json:"id"`
	RunID string `json:"run_id"`
	// Round is the round the call was made in, or NoRound.
	Round int `json:"round"`
	// CandidateID is the candidate the call was for ("" for none, e.g. a
	// diagnosis); it need not have been added yet.
	CandidateID      string `json:"candidate_id,omitempty"`
	Purpose          string `json:"purpose"`
	Model            string `json:"model"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// UsageEstimated: the server reported no usage and kagent estimated
	// the token counts (and the cost from them).
	UsageEstimated bool          `json:"usage_estimated,omitempty"`
	CostUSD        float64       `json:"cost_usd"`
	Duration       time.Duration `json:"duration_ns"`
	// Fingerprint identifies the request (the replay key).
	Fingerprint string    `json:"fingerprint,omitempty"`
	Error       string    `json:"error,omitempty"`
	At          time.Time `json:"at"`
}

// Totals add up LLM calls.
type Totals struct {
	Calls            int   `json:"calls"`
	Failed           int   `json:"failed"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// EstimatedCalls counts the calls whose token counts kagent estimated
	// (LLMCall.UsageEstimated): the tokens and dollars are then partly
	// estimates.
	EstimatedCalls int           `json:"estimated_calls,omitempty"`
	CostUSD        float64       `json:"cost_usd"`
	Duration       time.Duration `json:"duration_ns"` // summed; concurrent calls overlap
}

// Plus is t and u added up.
func (t Totals) Plus(u Totals) Totals {
	t.Calls += u.Calls
	t.Failed += u.Failed
	t.PromptTokens += u.PromptTokens
	t.CompletionTokens += u.CompletionTokens
	t.EstimatedCalls += u.EstimatedCalls
	t.CostUSD += u.CostUSD
	t.Duration += u.Duration
	return t
}

// Usage is a run's LLM spend, in total, per purpose and per model (the
// model that answered each call, as LLMCall.Model records it).
type Usage struct {
	Totals
	ByPurpose map[string]Totals `json:"by_purpose,omitempty"`
	ByModel   map[string]Totals `json:"by_model,omitempty"`
}

// Event is one line of a run's live log. The store writes events itself for
// every change it records (kinds "run.created", "round.started",
// "candidate.timed", ...), in the same transaction as the change; the loop
// may add its own with AddEvent.
type Event struct {
	ID          int64           `json:"id"`
	RunID       string          `json:"run_id"`
	Round       int             `json:"round"` // NoRound when none
	CandidateID string          `json:"candidate_id,omitempty"`
	At          time.Time       `json:"at"`
	Kind        string          `json:"kind"`
	Message     string          `json:"message,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
}

// RunDetail is a run with its rounds and candidates.
type RunDetail struct {
	Run
	Rounds     []Round     `json:"rounds"`
	Candidates []Candidate `json:"candidates"`
}

// RunFilter selects runs for ListRuns. Zero fields select everything.
type RunFilter struct {
	KernelDir string    // exact kernel dir (cleaned) as given to CreateRun
	Status    RunStatus // one status
	Limit     int       // at most this many (0: all)
}

// CandidateFilter selects candidates. Empty fields select everything.
type CandidateFilter struct {
	Statuses []Status
	Rounds   []int
}
