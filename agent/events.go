package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/internal/termtext"
	"github.com/kagent-kernels/kagent/platform"
)

// Event kinds written with --events (one JSON line each).
const (
	EventRunStarted   = "run_started"
	EventRoundStarted = "round_started"
	// EventScreened: a strategy screened a batch of knob variants (autotune).
	EventScreened          = "screened"
	EventCandidateVerified = "candidate_verified"
	EventCandidateTimed    = "candidate_timed"
	EventPromoted          = "promoted"
	EventRoundFinished     = "round_finished"
	EventRunFinished       = "run_finished"
)

// Event is one step of a run, as written to --events FILE and the run dir's
// events.jsonl. Fields that do not apply to a kind are omitted.
type Event struct {
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
	RunID string    `json:"run_id"`
	// Round is set for every kind but run_started and run_finished.
	Round     *int   `json:"round,omitempty"`
	Candidate string `json:"candidate,omitempty"`
	Parent    string `json:"parent,omitempty"`
	Direction string `json:"direction,omitempty"`
	// Attempt counts refinements of the slot (0: the first rewrite).
	Attempt int `json:"attempt,omitempty"`

	// candidate_verified (and a candidate_timed whose timing was rejected)
	Passed  *bool  `json:"passed,omitempty"`
	Failure string `json:"failure,omitempty"`
	Reason  string `json:"reason,omitempty"`

	// candidate_timed; Budget names a screening timing's budget (halving's
	// early rungs), "" for a full timing
	MedianMS float64 `json:"median_ms,omitempty"`
	CV       float64 `json:"cv,omitempty"`
	Budget   string  `json:"budget,omitempty"`

	// promoted and round_finished / run_finished: the best so far
	BestID           string  `json:"best_id,omitempty"`
	BestMS           float64 `json:"best_ms,omitempty"`
	ImprovementPct   float64 `json:"improvement_pct,omitempty"`
	SpeedupVsInput   float64 `json:"speedup_vs_input,omitempty"`
	SpeedupVsEager   float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile float64 `json:"speedup_vs_compile,omitempty"`

	// run_started
	KernelDir string `json:"kernel_dir,omitempty"`
	Strategy  string `json:"strategy,omitempty"`
	Platform  string `json:"platform,omitempty"`
	Device    string `json:"device,omitempty"`
	RunDir    string `json:"run_dir,omitempty"`
	Resumed   bool   `json:"resumed,omitempty"`

	// round_started: how many candidates the round proposes; screened: how
	// many variants passed the screen
	Slots int `json:"slots,omitempty"`
	// screened: the variants screened in one batch, its seconds and the
	// kernel launches compiled ahead (MedianMS is the fastest screen, Reason
	// how they were screened)
	Screened int     `json:"screened,omitempty"`
	ScreenS  float64 `json:"screen_s,omitempty"`
	Compiled int     `json:"compiled,omitempty"`
	// screened: of ScreenS, the seconds importing and recording the
	// variants, and compiling their launches
	LoadS    float64 `json:"load_s,omitempty"`
	CompileS float64 `json:"compile_s,omitempty"`
	// round_finished
	Promotions int `json:"promotions,omitempty"`

	// round_finished and run_finished: LLM spend so far; LLMEstimatedCalls
	// counts the calls whose tokens kagent estimated (the server reported
	// no usage)
	LLMCalls          int     `json:"llm_calls,omitempty"`
	LLMTokens         int64   `json:"llm_tokens,omitempty"`
	LLMEstimatedCalls int     `json:"llm_estimated_calls,omitempty"`
	LLMCostUSD        float64 `json:"llm_cost_usd,omitempty"`

	// run_finished
	Status     string `json:"status,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	Improved   *bool  `json:"improved,omitempty"`
}

// emitter fans events out to JSON-lines writers and a progress printer.
// Safe for concurrent use.
type emitter struct {
	mu       sync.Mutex
	json     []io.Writer
	progress io.Writer
	now      func() time.Time
	runID    string
}

func (e *emitter) emit(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Time.IsZero() {
		ev.Time = e.now().UTC()
	}
	if ev.RunID == "" {
		ev.RunID = e.runID
	}
	b, err := json.Marshal(ev)
	if err == nil {
		b = append(b, '\n')
		for _, w := range e.json {
			_, _ = w.Write(b)
		}
	}
	if e.progress != nil {
		if line := ProgressLine(ev); line != "" {
			fmt.Fprintln(e.progress, termtext.Line(line))
		}
	}
}

// ProgressLine renders an event for a person: one plain line, fit for a
// terminal and for CI logs alike (RunInput.Progress prints it; a display of
// its own renders the events of RunInput.Events with it). It may hold
// untrusted text (kernel names, LLM directions): print it through
// internal/termtext.
func ProgressLine(ev Event) string {
	round := func() string {
		if ev.Round == nil {
			return ""
		}
		return fmt.Sprintf("round %d: ", *ev.Round)
	}
	switch ev.Event {
	case EventRunStarted:
		verb := "started"
		if ev.Resumed {
			verb = "resumed"
		}
		return fmt.Sprintf("kagent: run %s %s: %s, %s strategy on %s%s; artifacts in %s",
			ev.RunID, verb, ev.KernelDir, ev.Strategy, ev.Platform, paren(ev.Device), ev.RunDir)
	case EventRoundStarted:
		return fmt.Sprintf("%s%d candidate%s", round(), ev.Slots, plural(ev.Slots))
	case EventScreened:
		fastest := ""
		if ev.MedianMS > 0 {
			fastest = fmt.Sprintf(", fastest %.4g ms", ev.MedianMS)
		}
		return fmt.Sprintf("%sscreened %d variant%s in %.1f s: %d passed%s", round(), ev.Screened, plural(ev.Screened),
			ev.ScreenS, ev.Slots, fastest)
	case EventCandidateVerified:
		what := ev.Candidate
		if ev.Direction != "" {
			what += " (" + clip(ev.Direction, 60) + ")"
		}
		if ev.Passed != nil && *ev.Passed {
			return fmt.Sprintf("%s%s verified", round(), what)
		}
		if ev.Failure == platform.FailureSlower {
			return fmt.Sprintf("%s%s cut: %s", round(), what, clip(ev.Reason, 160))
		}
		return fmt.Sprintf("%s%s rejected: %s: %s", round(), what, ev.Failure, clip(ev.Reason, 160))
	case EventCandidateTimed:
		if ev.Passed != nil && !*ev.Passed {
			return fmt.Sprintf("%s%s timing rejected: %s: %s", round(), ev.Candidate, ev.Failure, clip(ev.Reason, 160))
		}
		if ev.Budget != "" {
			return fmt.Sprintf("%s%s %.4g ms (cv %.1f%%, %s)", round(), ev.Candidate, ev.MedianMS, 100*ev.CV, ev.Budget)
		}
		return fmt.Sprintf("%s%s %.4g ms (cv %.1f%%)", round(), ev.Candidate, ev.MedianMS, 100*ev.CV)
	case EventPromoted:
		return fmt.Sprintf("%s%s promoted: %.4g ms, %.1f%% faster than the best; %s",
			round(), ev.Candidate, ev.BestMS, ev.ImprovementPct, speedups(ev))
	case EventRoundFinished:
		return fmt.Sprintf("%sbest %s %.4g ms (%s)%s", round(), ev.BestID, ev.BestMS, speedups(ev), spend(ev))
	case EventRunFinished:
		if ev.BestID == "" || ev.BestMS <= 0 {
			// Nothing was measured (the input failed, or the run stopped first).
			return fmt.Sprintf("kagent: run %s %s: %s%s", ev.RunID, ev.Status, ev.StopReason, spend(ev))
		}
		return fmt.Sprintf("kagent: run %s %s: %s; best %s %.4g ms (%s)%s",
			ev.RunID, ev.Status, ev.StopReason, ev.BestID, ev.BestMS, speedups(ev), spend(ev))
	}
	return ""
}

func speedups(ev Event) string {
	parts := []string{ratio.String(ev.SpeedupVsInput) + "x input"}
	if ev.SpeedupVsEager > 0 {
		parts = append(parts, ratio.String(ev.SpeedupVsEager)+"x eager")
	}
	if ev.SpeedupVsCompile > 0 {
		parts = append(parts, ratio.String(ev.SpeedupVsCompile)+"x compile")
	}
	return strings.Join(parts, ", ")
}

func spend(ev Event) string {
	if ev.LLMCalls == 0 {
		return ""
	}
	return fmt.Sprintf("; llm %d call%s, %d tokens%s, $%.2f", ev.LLMCalls, plural(ev.LLMCalls), ev.LLMTokens,
		report.EstimatedTag(ev.LLMEstimatedCalls, ev.LLMCalls), ev.LLMCostUSD)
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// clip folds s onto one line of at most n bytes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func ptr[T any](v T) *T { return &v }
