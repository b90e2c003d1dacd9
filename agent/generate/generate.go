package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
)

// Defaults.
const (
	// DefaultSeeds is KernelAgent's NUM_KERNEL_SEEDS.
	DefaultSeeds = 4
	// DefaultTemperature is what seeds are sampled at when llm.temperature is
	// not set (KernelAgent's 0.8), so that they differ.
	DefaultTemperature = 0.8
	// defaultMaxTokens bounds a reply unless llm.max_tokens says otherwise.
	defaultMaxTokens = 24576
	// Strategy is the strategy name of a generation recorded in the store.
	Strategy = "generate"
)

// Input is everything a generation needs. Task, Platform, Session and LLM
// are required.
type Input struct {
	// Config supplies refine_attempts, llm.max_tokens, llm.temperature,
	// llm.model and target_platform.
	Config configs.Config
	// Task is the problem's kernel dir (loaded without RequireKernel); a
	// kernel already in it is ignored.
	Task     *kerneldir.Task
	Platform platform.Platform
	// Session is Platform opened on Task.
	Session platform.Session
	LLM     llm.Client
	// Prompts renders the prompts (nil: the embedded templates).
	Prompts *prompts.Set
	// Seeds is the number of independent first attempts (0: DefaultSeeds).
	Seeds int
	// Entry is the interface asked for: prompts.EntryModelNew (default, the
	// KernelBench form) or prompts.EntryKernelFunction.
	Entry string
	// Store, when set, records the generation as a run; RunID names it
	// ("": the store picks one).
	Store *store.Store
	RunID string
	// Dir receives the artifacts ("": <Task.Dir>/.kagent/generate/<run id>).
	Dir string
	// Progress receives one human-readable line per attempt (nil: none).
	Progress io.Writer
	Logger   *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Attempt is one kernel a seed produced and its verdict.
type Attempt struct {
	// ID is s<seed> for a first attempt, s<seed>f<n> for its n-th repair.
	ID      string `json:"id"`
	Seed    int    `json:"seed"`
	Attempt int    `json:"attempt"`
	// Path is the kernel file in the artifacts dir.
	Path    string `json:"path"`
	Passed  bool   `json:"passed"`
	Failure string `json:"failure,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// SeedOutcome is how one seed ended.
type SeedOutcome struct {
	Seed     int       `json:"seed"`
	Attempts []Attempt `json:"attempts"`
	Passed   bool      `json:"passed"`
	// Stopped says why a seed that did not pass stopped: "refine attempts
	// spent", "another seed won", "llm: ...", "budget: ...".
	Stopped string `json:"stopped,omitempty"`
}

// Last describes the seed's end: its last failure and why it stopped.
func (s SeedOutcome) Last() string {
	if s.Passed {
		return "passed"
	}
	var parts []string
	if n := len(s.Attempts); n > 0 && s.Attempts[n-1].Failure != "" {
		a := s.Attempts[n-1]
		parts = append(parts, a.Failure+": "+a.Reason)
	}
	if s.Stopped != "" {
		parts = append(parts, "("+s.Stopped+")")
	}
	if len(parts) == 0 {
		return "no kernel"
	}
	return strings.Join(parts, " ")
}

// Result is the outcome of a generation that found a kernel.
type Result struct {
	RunID string `json:"run_id,omitempty"`
	// Dir is the artifacts dir.
	Dir string `json:"dir"`
	// Winner is the attempt that passed first; Source is its kernel.
	Winner  Attempt          `json:"winner"`
	Source  string           `json:"-"`
	Verdict platform.Verdict `json:"verdict"`
	// Seeds says how every seed ended, by seed number.
	Seeds []SeedOutcome `json:"seeds"`
	// Usage adds up the LLM calls of the generation.
	Usage    store.Totals  `json:"llm_usage"`
	Duration time.Duration `json:"duration_ns"`
}

// Kernels counts the kernels verified (or rejected before running).
func (r Result) Kernels() int {
	n := 0
	for _, s := range r.Seeds {
		n += len(s.Attempts)
	}
	return n
}

func (in *Input) check() error {
	switch {
	case in.LLM == nil:
		return fmt.Errorf("generate: %w: set llm.model (or --llm-model), or replay a transcript", ErrNoLLM)
	case in.Task == nil:
		return fmt.Errorf("generate: %w: no problem", ErrInvalidInput)
	case in.Platform == nil || in.Session == nil:
		return fmt.Errorf("generate: %w: no platform session", ErrInvalidInput)
	case !in.Platform.Executes():
		return fmt.Errorf("generate: %w: the %s platform verifies nothing", ErrInvalidInput, in.Platform.Name())
	}
	switch in.Entry {
	case "", prompts.EntryModelNew, prompts.EntryKernelFunction:
	default:
		return fmt.Errorf("generate: %w: entry %q (want %s or %s)", ErrInvalidInput, in.Entry, prompts.EntryModelNew, prompts.EntryKernelFunction)
	}
	return nil
}

func (in *Input) defaults() {
	if in.Logger == nil {
		in.Logger = slog.New(slog.DiscardHandler)
	}
	if in.Now == nil {
		in.Now = time.Now
	}
	if in.Prompts == nil {
		in.Prompts = prompts.Default()
	}
	if in.Seeds <= 0 {
		in.Seeds = DefaultSeeds
	}
	if in.Entry == "" {
		in.Entry = prompts.EntryModelNew
	}
}

// gen is one generation in progress.
type gen struct {
	in     Input
	runID  string
	dir    string
	target prompts.Target
	log    *slog.Logger

	// cancel stops the seeds: with errWon when one passed, with a fatal
	// error otherwise.
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	winner *Attempt
	source string
	vd     platform.Verdict
	fatal  error
	usage  store.Totals
}

// errWon is the cause the seeds are cancelled with once one passed.
var errWon = errors.New("another seed won")

// Run generates a kernel for in.Task: in.Seeds seeds in parallel, each
// verified and refined on failure, the first that passes wins. It returns an
// *AllFailedError when none passes, and the context's error when cancelled.
func Run(ctx context.Context, in Input) (Result, error) {
	in.defaults()
	if err := in.check(); err != nil {
		return Result{}, err
	}
	start := in.Now()
	g := &gen{in: in, log: in.Logger}
	g.target = target(ctx, in)
	if err := g.open(ctx); err != nil {
		return Result{}, err
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g.cancel = cancel

	outcomes := make([]SeedOutcome, in.Seeds)
	var wg sync.WaitGroup
	for i := range in.Seeds {
		wg.Go(func() { outcomes[i] = g.seed(ctx, wctx, i+1) })
	}
	wg.Wait()

	res := Result{RunID: g.runID, Dir: g.dir, Seeds: outcomes, Usage: g.usage, Duration: in.Now().Sub(start)}
	bg := context.WithoutCancel(ctx)
	switch {
	case g.fatal != nil:
		g.finish(bg, store.RunFailed, oneLine(g.fatal.Error()))
		return res, g.fatal
	case g.winner != nil:
		res.Winner, res.Source, res.Verdict = *g.winner, g.source, g.vd
		g.finish(bg, store.RunFinished, fmt.Sprintf("seed %d passed with %s", g.winner.Seed, g.winner.ID))
		if err := writeJSON(filepath.Join(g.dir, "result.json"), res); err != nil {
			return res, err
		}
		return res, nil
	case ctx.Err() != nil:
		g.finish(bg, store.RunInterrupted, store.InterruptReason(ctx))
		return res, context.Cause(ctx)
	}
	err := &AllFailedError{Seeds: outcomes}
	g.finish(bg, store.RunFinished, oneLine(err.Error()))
	_ = writeJSON(filepath.Join(g.dir, "result.json"), res)
	return res, err
}

// target is what the prompts are written for.
func target(ctx context.Context, in Input) prompts.Target {
	specs, _ := platform.SpecsOf(ctx, in.Platform, in.Session)
	return prompts.NewTarget(in.Config.TargetPlatform, in.Platform.Name(), in.Platform.Executes(), specs, in.Entry,
		in.Task.Options.TF32)
}

// open creates the store run (when there is a store) and the artifacts dir.
func (g *gen) open(ctx context.Context) error {
	g.runID = g.in.RunID
	if st := g.in.Store; st != nil {
		device := ""
		if g.in.Session != nil {
			device = g.in.Session.About().Device
		}
		run, err := st.CreateRun(ctx, store.Run{ID: g.runID, KernelDir: g.in.Task.Dir, Problem: g.in.Task.Name,
			Strategy: Strategy, Platform: g.in.Platform.Name(), Device: device})
		if err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		g.runID = run.ID
		if err := st.StartRound(ctx, g.runID, 0); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
	}
	if g.runID == "" {
		g.runID = g.in.Now().UTC().Format("20060102-150405")
	}
	g.dir = g.in.Dir
	if g.dir == "" {
		g.dir = filepath.Join(g.in.Task.Dir, ".kagent", "generate", g.runID)
	}
	abs, err := filepath.Abs(g.dir)
	if err != nil {
		return fmt.Errorf("generate: artifacts dir: %w", err)
	}
	g.dir = abs
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return fmt.Errorf("generate: create artifacts dir: %w", err)
	}
	return nil
}

// finish records the end of the generation in the store.
func (g *gen) finish(ctx context.Context, status store.RunStatus, reason string) {
	st := g.in.Store
	if st == nil {
		return
	}
	// Attempts a cancelled seed left unverified end as failed.
	if cs, err := st.Candidates(ctx, g.runID, store.CandidateFilter{Statuses: []store.Status{store.StatusProposed}}); err == nil {
		for _, c := range cs {
			_, _ = st.UpdateCandidate(ctx, g.runID, c.ID, store.Update{Status: store.StatusFailed, Error: "cancelled: " + reason})
		}
	}
	if err := st.FinishRun(ctx, g.runID, status, reason); err != nil {
		g.log.Warn("record the end of the generation", "run", g.runID, "err", err)
	}
}

// fail records a fatal error and stops every seed.
func (g *gen) fail(err error) {
	g.mu.Lock()
	if g.fatal == nil {
		g.fatal = err
	}
	g.mu.Unlock()
	g.cancel(err)
}

// win records the first passing attempt and stops the other seeds. It
// reports whether a was first.
func (g *gen) win(a Attempt, src string, v platform.Verdict) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.winner != nil || g.fatal != nil {
		return false
	}
	g.winner, g.source, g.vd = &a, src, v
	g.cancel(errWon)
	return true
}

func (g *gen) progress(format string, args ...any) {
	if g.in.Progress != nil {
		fmt.Fprintf(g.in.Progress, format+"\n", args...)
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
