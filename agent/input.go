package agent

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/roofline"
	"github.com/kagent-kernels/kagent/search"
	"strings"
)

// RunInput is everything a run needs. Task, Platform, Session and Store are
// required; the rest have defaults.
type RunInput struct {
	// Config is the resolved configuration (Normalize and Validate done).
	Config configs.Config
	// ConfigYAML is the configuration as YAML, stored with the run so that
	// `kagent runs show` and a resume see what the run was told.
	ConfigYAML string
	Task       *kerneldir.Task
	Platform   platform.Platform
	// Session is the platform opened on Task. It may also implement
	// platform.Comparer (interleaved timing) and Accept (the acceptance gate).
	Session platform.Session
	Store   *store.Store
	// LLM is the model client; nil means none is configured, and the tune
	// strategy proposes instead. A client that reports llm.Stats (llm.New's
	// does) feeds the spend shown in progress lines.
	LLM llm.Client
	// Budget is the LLM budget, checked against the spend recorded in the
	// store before a resume (the client enforces it within one process).
	Budget llm.Limits
	// Prompts renders the prompts (nil: the embedded templates).
	Prompts *prompts.Set
	// Tuner proposes knob variants for the tune strategy and the polish (nil:
	// no tune proposer).
	Tuner search.Tuner
	// RunDir is where artifacts go ("": <kernel dir>/.kagent/runs/<run id>).
	RunDir string
	// RunID names a new run ("": the store picks one).
	RunID string
	// Events receives one JSON line per step (nil: none besides the run
	// dir's events.jsonl).
	Events io.Writer
	// Progress receives human-readable progress lines (nil: none).
	Progress io.Writer
	// WriteOptimized writes optimized_kernel_<strategy>.py into the kernel
	// dir when the run finds a verified improvement (KernelAgent's output).
	WriteOptimized bool
	Logger         *slog.Logger
	// Now is the clock of event times (nil: time.Now).
	Now func() time.Time
}

func (in *RunInput) check() error {
	switch {
	case in.Task == nil:
		return fmt.Errorf("%w: no kernel dir", ErrInvalidInput)
	case in.Platform == nil || in.Session == nil:
		return fmt.Errorf("%w: no platform session", ErrInvalidInput)
	case in.Store == nil:
		return fmt.Errorf("%w: no run store", ErrInvalidInput)
	case !in.Platform.Executes():
		return fmt.Errorf("%w: %s (use DryRun)", ErrNotExecuting, in.Platform.Name())
	}
	if !search.Searches(in.Config.Strategy) {
		return fmt.Errorf("%w: strategy %q does not search (want one of %s)", ErrInvalidInput, in.Config.Strategy, strings.Join(search.Searching(), ", "))
	}
	return nil
}

func (in *RunInput) defaults() {
	if in.Logger == nil {
		in.Logger = slog.New(slog.DiscardHandler)
	}
	if in.Now == nil {
		in.Now = time.Now
	}
	if in.Prompts == nil {
		in.Prompts = prompts.Default()
	}
}

// defaultRunDir is where a run's artifacts go when RunDir is empty.
func defaultRunDir(kernelDir, runID string) string {
	return filepath.Join(kernelDir, ".kagent", "runs", runID)
}

// Kernel is one measured kernel of a run.
type Kernel struct {
	ID     string `json:"id"`
	Round  int    `json:"round"`
	Path   string `json:"path,omitempty"`
	Source string `json:"-"`
	// Timing is the kernel's own timing (not an interleaved comparison).
	Timing   platform.Timing  `json:"timing"`
	Roofline *roofline.Result `json:"roofline,omitempty"`
}

// Duplicates counts candidates rejected as duplicates without running.
type Duplicates struct {
	// BySource: the normalised source repeats an earlier candidate's.
	BySource int `json:"by_source"`
	// ByCode: the code fingerprint does (platform.Fingerprint).
	ByCode int `json:"by_code"`
}

// Result is what a run found.
type Result struct {
	RunID  string          `json:"run_id"`
	RunDir string          `json:"run_dir"`
	Status store.RunStatus `json:"status"`
	// StopReason says which rule ended the search.
	StopReason string `json:"stop_reason"`
	// Improved: a verified candidate beat the input by the promotion rule
	// and passed the acceptance gate.
	Improved bool   `json:"improved"`
	Input    Kernel `json:"input"`
	Best     Kernel `json:"best"`
	// Eager and Compile are the PyTorch baselines (nil: not timed).
	Eager   *platform.Timing `json:"eager,omitempty"`
	Compile *platform.Timing `json:"compile,omitempty"`
	// Speedups of the best kernel (0 when the baseline is missing).
	SpeedupVsInput   float64 `json:"speedup_vs_input"`
	SpeedupVsEager   float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile float64 `json:"speedup_vs_compile,omitempty"`
	// FloorMS is the problem's roofline floor on this GPU (its inputs read
	// and outputs written once at peak bandwidth, or its FLOPs at peak rate;
	// 0 when unknown), and FloorFraction that floor over the best's median.
	FloorMS       float64 `json:"floor_ms,omitempty"`
	FloorFraction float64 `json:"floor_fraction,omitempty"`
	// Acceptance is the acceptance gate's verdict on the best (nil: not run,
	// e.g. the best is the input kernel or the session has no gate).
	Acceptance *platform.Verdict `json:"acceptance,omitempty"`
	// Rounds is the number of search rounds run (round 0 not counted).
	Rounds int `json:"rounds"`
	// Counts is how many candidates ended in each status.
	Counts map[store.Status]int `json:"counts"`
	// Duplicates counts the candidates skipped without running as repeats
	// of an earlier one, by how they were found.
	Duplicates Duplicates  `json:"duplicates"`
	Usage      store.Usage `json:"llm_usage"`
	// BestPath is best_kernel.py in the run dir; OptimizedPath is
	// optimized_kernel_<strategy>.py in the kernel dir ("" when not written).
	BestPath      string `json:"best_path,omitempty"`
	OptimizedPath string `json:"optimized_path,omitempty"`
	// Representative is false when the timings say nothing about GPU speed.
	Representative bool `json:"representative"`
}
