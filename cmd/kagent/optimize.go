package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/agent/llm"
	runreport "github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/search"
	"github.com/kagent-kernels/kagent/search/tune"
)

func optimizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "optimize",
		Usage: "optimize the Triton kernel of a kernel dir",
		Description: "Loads the kernel dir (problem.py, input.py or kernel.py, optional test.py and kagent.yaml),\n" +
			"verifies and times the input kernel, then searches for faster verified rewrites.\n" +
			"Every step is recorded in KERNEL_DIR/.kagent/history.db; a killed run continues with --resume RUN.\n" +
			"With --strategy noop nothing is executed: the plan and every prompt are written to the run directory.\n\n" +
			"Exit codes: 0 a verified improvement was found, 3 the run finished without one,\n" +
			"1 the run failed, 2 bad flags, configuration or kernel dir, 4 this machine lacks what the run needs,\n" +
			"130 interrupted (resume with --resume RUN).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "kernel-dir", Aliases: []string{"k"}, Usage: "kernel `DIR`: the folder holding problem.py and input.py (or kernel.py)"},
			&cli.StringFlag{Name: "out", Usage: "run directory (default: KERNEL_DIR/.kagent/runs/RUN_ID)"},
			&cli.StringFlag{Name: "resume", Usage: "continue the run `RUN` (an id from kagent runs list) with the configuration it started with"},
			&cli.StringFlag{Name: "llm-record", Usage: "save every LLM exchange as a JSON file in `DIR`"},
			&cli.StringFlag{Name: "llm-replay", Usage: "serve LLM replies from a recorded `DIR` instead of calling a model (no key needed)"},
			&cli.StringFlag{Name: "llm-replay-match", Value: llm.MatchSimilar, Usage: "how replayed replies are matched to prompts: similar (exact, numbers masked, then the closest), strict (exact or numbers masked) or purpose (each purpose's replies in recorded order)"},
			&cli.StringFlag{Name: "events", Usage: "write one JSON line per step to `FILE` (run_started, round_started, candidate_verified, candidate_timed, promoted, round_finished, run_finished)"},
			&cli.StringFlag{Name: "db", Usage: "run history `FILE` (default: KERNEL_DIR/.kagent/history.db)"},
			noProgressFlag(),
		}, slices.Concat(configFlags(), searchConfigFlags(), llmConfigFlags())...),
		Action: runOptimize,
	}
}

// runSetup is what every command that works on a kernel dir starts from.
type runSetup struct {
	cfg      configs.Config
	src      configs.Source
	task     *kerneldir.Task
	platform platform.Platform
	// prompts holds the templates: overrides (nil: the embedded templates).
	prompts *prompts.Set
}

// setup loads the config, the kernel dir and the platform, in that order, so
// the first error is the one the user must fix first.
func setup(c *cli.Context) (*runSetup, error) {
	cfg, src, err := loadConfig(c)
	if err != nil {
		return nil, err
	}
	return setupWith(c, cfg, src)
}

// setupWith loads the kernel dir and the platform for a configuration.
func setupWith(c *cli.Context, cfg configs.Config, src configs.Source) (*runSetup, error) {
	if cfg.Python == "" {
		cfg.Python = defaultPython()
	}
	if strings.ContainsRune(cfg.Python, filepath.Separator) {
		// A path such as .venv/bin/python means the one under the current
		// folder, wherever the harness later runs (not resolved through
		// links: a venv's python finds its packages by its own path).
		cfg.Python = absPath(cfg.Python)
	}
	if c.String("kernel-dir") == "" {
		return nil, usageError("--kernel-dir is required: the folder holding problem.py and input.py")
	}
	task, err := kerneldir.Load(c.Context, c.String("kernel-dir"), kerneldir.LoadOptions{Python: cfg.Python, RequireKernel: true})
	if err != nil {
		return nil, err
	}
	name := cfg.PlatformName()
	if name == "" {
		if name, err = platform.Detect(platform.SystemProbe()); err != nil {
			return nil, err
		}
	}
	// cfg.Size records the shape chosen, so a resumed run times the same one.
	if cfg.Size, err = task.ChooseSize(cfg.Size, name == configs.PlatformCPU); err != nil {
		return nil, err
	}
	p, err := platform.Open(name, platformConfig(cfg, platformLogger(c)))
	if err != nil {
		return nil, err
	}
	p = checked(p, cfg.Python, cfg.PlatformKwargs)
	set, err := promptSet(cfg)
	if err != nil {
		return nil, err
	}
	return &runSetup{cfg: cfg, src: src, task: task, platform: p, prompts: set}, nil
}

// platformConfig extracts what a platform needs from the run configuration.
func platformConfig(cfg configs.Config, log *slog.Logger) platform.Config {
	return platform.Config{
		Python:         cfg.Python,
		GPUName:        cfg.GPUName,
		SpecsFile:      cfg.SpecsFile,
		Kwargs:         cfg.PlatformKwargs,
		NCUPath:        cfg.NCUBinPath,
		NCUMetrics:     cfg.ProfileMetrics,
		VerifyTimeout:  cfg.Timeouts.Verify,
		BenchTimeout:   cfg.Timeouts.Bench,
		ProfileTimeout: cfg.Timeouts.Profile,
		WarmupMS:       cfg.BenchmarkWarmup,
		RepMS:          cfg.BenchmarkRepeat,
		Logger:         log,
	}
}

// historyPath is the run history file: --db, else KERNEL_DIR/.kagent/history.db.
func historyPath(c *cli.Context, kernelDir string) string {
	if p := c.String("db"); p != "" {
		return absPath(p)
	}
	return filepath.Join(absPath(kernelDir), ".kagent", "history.db")
}

func runOptimize(c *cli.Context) error {
	if c.String("llm-record") != "" && c.String("llm-replay") != "" {
		return usageError("--llm-record and --llm-replay are exclusive: record a transcript or replay one")
	}
	if m := c.String("llm-replay-match"); !slices.Contains(llm.MatchRules, m) {
		return usageError("--llm-replay-match %q: give %s", m, strings.Join(llm.MatchRules, ", "))
	}
	var s *runSetup
	var err error
	resume := c.String("resume")
	if resume != "" {
		s, err = resumeSetup(c, resume)
	} else {
		s, err = setup(c)
	}
	if err != nil {
		return err
	}
	if d := c.String("llm-record"); d != "" {
		s.cfg.LLM.Record, s.cfg.LLM.Replay = absPath(d), ""
	}
	if d := c.String("llm-replay"); d != "" {
		s.cfg.LLM.Replay, s.cfg.LLM.Record = absPath(d), ""
	}
	if !s.platform.Executes() || !search.Searches(s.cfg.Strategy) {
		if resume != "" {
			return usageError("--resume: the %s platform executes nothing; a dry run has nothing to resume", s.platform.Name())
		}
		runID := newRunID(time.Now())
		runDir := c.String("out")
		if runDir == "" {
			runDir = filepath.Join(s.task.Dir, ".kagent", "runs", runID)
		}
		return dryRun(c, s, runID, runDir, logger(c))
	}
	d := newDisplay(c)
	defer d.Close()
	log := logger(c)
	client, err := llmClient(s.cfg, c.String("llm-replay-match"), log)
	if err != nil {
		return err
	}
	// The machine first: a run this machine cannot make (no GPU stack, no
	// torch) leaves nothing in the kernel dir, not even an empty history.
	d.start("kagent", "starting the Python workers")
	sess, err := s.platform.Open(c.Context, s.task)
	if err != nil {
		return err
	}
	defer sess.Close()
	st, err := store.Open(c.Context, historyPath(c, s.task.Dir))
	if err != nil {
		return err
	}
	defer st.Close()
	cfgYAML, err := yaml.Marshal(s.cfg)
	if err != nil {
		return fmt.Errorf("record the configuration: %w", err)
	}
	in := agent.RunInput{
		Config: s.cfg, ConfigYAML: string(cfgYAML), Task: s.task, Platform: s.platform, Store: st, LLM: client,
		Budget: agent.LLMConfig(s.cfg).Budget, Tuner: search.KnobTuner{Finder: tune.Finder{Python: s.cfg.Python}},
		Progress: d.progress(c.App.Writer), WriteOptimized: true, Logger: log, Prompts: s.prompts,
	}
	if out := c.String("out"); out != "" {
		in.RunDir = absPath(out)
	}
	if p := c.String("events"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return usageError("--events: %v", err)
		}
		defer f.Close()
		in.Events = f
	}
	if ev := d.events(); ev != nil && in.Events != nil {
		in.Events = io.MultiWriter(in.Events, ev)
	} else if ev != nil {
		in.Events = ev
	}
	in.Session = sess
	var res agent.Result
	if resume != "" {
		res, err = agent.Resume(c.Context, in, resume)
	} else {
		res, err = agent.Run(c.Context, in)
	}
	d.Close()
	return optimizeOutcome(c, s, res, err)
}

// optimizeOutcome prints the result and picks the exit code.
func optimizeOutcome(c *cli.Context, s *runSetup, res agent.Result, err error) error {
	w := c.App.Writer
	var ir *agent.InputRejectedError
	switch {
	case err != nil && c.Context.Err() != nil && res.RunID != "":
		fmt.Fprintf(c.App.ErrWriter, "kagent: run %s interrupted; continue it with: kagent optimize --kernel-dir %s --resume %s\n",
			res.RunID, s.task.Dir, res.RunID)
		return fmt.Errorf("run %s interrupted: %w", res.RunID, context.Canceled)
	case errors.As(err, &ir):
		return withCode(ExitError, err)
	case errors.Is(err, agent.ErrNotResumable), errors.Is(err, agent.ErrInvalidInput):
		return withCode(ExitUsage, err)
	case err != nil && res.RunID != "":
		return fmt.Errorf("run %s failed (continue it with --resume %s): %w", res.RunID, res.RunID, err)
	case err != nil:
		return err
	}
	printResult(w, res)
	if !res.Improved {
		return withCode(ExitNoImprovement, fmt.Errorf("run %s finished without a verified improvement (%s)", res.RunID, res.StopReason))
	}
	return nil
}

// printResult prints a finished run's summary.
func printResult(w io.Writer, res agent.Result) {
	fmt.Fprintf(w, "\nrun %s: %s (%s)\n", res.RunID, res.Status, res.StopReason)
	t := newTable(w)
	t.row("KERNEL", "MEDIAN ms", "CV", "SPEEDUP")
	row := func(name string, tm *platform.Timing, speedup string) {
		if tm == nil {
			return
		}
		if tm.Unavailable != "" {
			t.row(name, "-", "-", "unavailable: "+tm.Unavailable)
			return
		}
		t.row(name, fmt.Sprintf("%.4f", tm.MedianMS), fmt.Sprintf("%.1f%%", 100*tm.CV), speedup)
	}
	row("eager", res.Eager, "")
	row("compile", res.Compile, "")
	row("input", &res.Input.Timing, "")
	var parts []string
	parts = append(parts, ratio.String(res.SpeedupVsInput)+"x input")
	if res.SpeedupVsEager > 0 {
		parts = append(parts, ratio.String(res.SpeedupVsEager)+"x eager")
	}
	if res.SpeedupVsCompile > 0 {
		parts = append(parts, ratio.String(res.SpeedupVsCompile)+"x compile")
	}
	row("best "+res.Best.ID, &res.Best.Timing, strings.Join(parts, ", "))
	_ = t.flush()
	if r := res.Best.Roofline; r != nil && r.Placed() {
		fmt.Fprintf(w, "roofline: %s-bound, %.1f%% SOL (%s)\n", r.Class, r.SOL, r.Source)
	} else if r != nil && r.Unplaced != "" {
		fmt.Fprintf(w, "roofline: n/a (%s)\n", r.Unplaced)
	}
	if res.FloorMS > 0 {
		fmt.Fprintf(w, "floor: %.4f ms (inputs read and outputs written once at peak); the best runs at %.1f%% of it\n", res.FloorMS, 100*res.FloorFraction)
	}
	if res.Acceptance != nil {
		fmt.Fprintln(w, "acceptance gate: passed (fresh process, new seeds)")
	}
	if d := res.Duplicates; d.BySource+d.ByCode > 0 {
		fmt.Fprintf(w, "duplicates skipped: %d (by source %d / by compiled code %d)\n", d.BySource+d.ByCode, d.BySource, d.ByCode)
	}
	if res.Usage.Calls > 0 {
		fmt.Fprintf(w, "llm: %d calls, %d tokens%s, $%.2f%s\n", res.Usage.Calls, res.Usage.PromptTokens+res.Usage.CompletionTokens,
			runreport.EstimatedTag(res.Usage.EstimatedCalls, res.Usage.Calls), res.Usage.CostUSD, modelCosts(res.Usage))
	}
	if !res.Representative {
		fmt.Fprintln(w, "note: timings on this platform are not representative of GPU performance")
	}
	fmt.Fprintf(w, "report: %s\nbest kernel: %s\n", filepath.Join(res.RunDir, "report.md"), res.BestPath)
	if res.OptimizedPath != "" {
		fmt.Fprintf(w, "optimized kernel: %s\n", res.OptimizedPath)
	}
}

// llmClient builds the model client of a configuration: a replay of a
// recorded transcript, a provider, or nil when no LLM is configured.
func llmClient(cfg configs.Config, match string, log *slog.Logger) (llm.Client, error) {
	lc := agent.LLMConfig(cfg)
	if cfg.LLM.Replay != "" && len(lc.Steps) > 0 {
		// The replayer serves by purpose as below; llm.New answers each
		// purpose as its step's model, at its step's prices.
		lc.ReplayMatch = match
		client, err := llm.New(lc, llm.WithLogger(log))
		if err != nil {
			return nil, usageError("--llm-replay: %v", err)
		}
		return client, nil
	}
	if cfg.LLM.Replay != "" {
		rp, err := llm.NewReplayer(cfg.LLM.Replay)
		if err != nil {
			return nil, usageError("--llm-replay: %v", err)
		}
		rp.Match = match
		rp.SetLogger(log)
		return llm.NewMeter(rp, lc.Budget, llm.WithConcurrency(lc.Concurrency)), nil
	}
	if !cfg.LLM.Configured() || search.WithoutLLM(cfg.Strategy) {
		return nil, nil
	}
	client, err := llm.New(lc, llm.WithLogger(log))
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	return client, nil
}

// resumeSetup rebuilds a run's setup from the configuration it stored, with
// KAGENT_* variables and explicit flags applied on top.
func resumeSetup(c *cli.Context, runID string) (*runSetup, error) {
	if c.IsSet("strategy") || c.IsSet("config") {
		return nil, usageError("--resume: a resumed run keeps the configuration it started with; drop --strategy and --config")
	}
	if c.String("kernel-dir") == "" {
		return nil, usageError("--kernel-dir is required: the folder of the run to resume")
	}
	path := historyPath(c, c.String("kernel-dir"))
	if _, err := os.Stat(path); err != nil {
		return nil, usageError("--resume %s: no run history at %s", runID, path)
	}
	st, err := store.Open(c.Context, path)
	if err != nil {
		return nil, err
	}
	detail, err := st.GetRun(c.Context, runID)
	st.Close()
	if errors.Is(err, store.ErrNotFound) {
		return nil, usageError("--resume: no run %s in %s (see kagent runs list)", runID, path)
	}
	if err != nil {
		return nil, err
	}
	src := configs.Source{Name: runID, Path: "the configuration of run " + runID, Data: []byte(detail.ConfigYAML)}
	cfg := configs.Default()
	if err := configs.Apply(&cfg, src); err != nil {
		return nil, err
	}
	if err := configs.ApplyEnv(&cfg, nil); err != nil {
		return nil, err
	}
	applyConfigFlags(c, &cfg)
	cfg.Strategy = detail.Strategy
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return setupWith(c, cfg, src)
}

// applyConfigFlags applies the explicitly set configuration flags and
// returns them as given ("--platform gpu"), sorted.
func applyConfigFlags(c *cli.Context, cfg *configs.Config) []string {
	var set []string
	for name, dst := range map[string]*string{
		"platform": (*string)(&cfg.Platform), "gpu-name": &cfg.GPUName, "python": &cfg.Python,
		"llm-model": &cfg.LLM.Model, "llm-provider": &cfg.LLM.Provider, "llm-base-url": &cfg.LLM.BaseURL,
		"size": &cfg.Size,
	} {
		if c.IsSet(name) {
			*dst = strings.TrimSpace(c.String(name))
			set = append(set, "--"+name+" "+*dst)
		}
	}
	for name, dst := range map[string]*int{"max-rounds": &cfg.MaxRounds, "num-workers": &cfg.NumWorkers} {
		if c.IsSet(name) {
			*dst = c.Int(name)
			set = append(set, fmt.Sprintf("--%s %d", name, *dst))
		}
	}
	sort.Strings(set)
	return set
}

// newRunID names a run by its start time plus a random suffix.
func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// plan is what a dry run writes: everything a real run would do.
type plan struct {
	RunID     string         `json:"run_id"`
	Executed  bool           `json:"executed"`
	Note      string         `json:"note"`
	Config    string         `json:"config_source"`
	Strategy  string         `json:"strategy"`
	Platform  string         `json:"platform"`
	Target    string         `json:"target_platform"`
	KernelDir string         `json:"kernel_dir"`
	Problem   string         `json:"problem"`
	Kernel    string         `json:"kernel"`
	Entry     string         `json:"entry"`
	Test      string         `json:"test,omitempty"`
	Options   map[string]any `json:"options"`
	LLM       string         `json:"llm"`
	Steps     []string       `json:"steps"`
}

func dryRun(c *cli.Context, s *runSetup, runID, runDir string, log *slog.Logger) error {
	if err := os.MkdirAll(filepath.Join(runDir, "input"), 0o755); err != nil {
		return fmt.Errorf("create run dir: %w", err)
	}
	// The files as they were read when the kernel dir was loaded.
	for _, f := range [][2]string{{s.task.ProblemPath, s.task.ProblemSource}, {s.task.KernelPath, s.task.KernelSource},
		{s.task.TestPath, s.task.TestSource}, {s.task.OptionsPath, s.task.OptionsSource}} {
		if f[0] == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(runDir, "input", filepath.Base(f[0])), []byte(f[1]), 0o644); err != nil {
			return fmt.Errorf("write input copy: %w", err)
		}
	}
	cfgYAML, err := yaml.Marshal(s.cfg)
	if err != nil {
		return fmt.Errorf("write resolved config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "config.yaml"), cfgYAML, 0o644); err != nil {
		return fmt.Errorf("write resolved config: %w", err)
	}
	var opts map[string]any
	b, _ := json.Marshal(s.task.Options)
	_ = json.Unmarshal(b, &opts)
	llmDesc := "none: the tune strategy needs no LLM"
	if !search.WithoutLLM(s.cfg.Strategy) {
		model := s.cfg.LLM.Model
		if model == "" {
			model = "(no model configured: set llm.model or --llm-model; prompts are rendered, not sent)"
		}
		llmDesc = model
		if s.cfg.LLM.Model != "" {
			llmDesc = agent.LLMConfig(s.cfg).Resolve().Provider + " " + model
		}
		if s.cfg.LLM.Replay != "" {
			llmDesc = "replay of " + s.cfg.LLM.Replay
		}
		for _, p := range configs.Purposes() {
			if st, ok := s.cfg.LLM.Steps[p]; ok {
				llmDesc += "; " + p + ": " + s.cfg.LLM.ModelFor(p)
				if st.Provider != "" {
					llmDesc += " (" + st.Provider + ")"
				}
			}
		}
	}
	p := plan{
		RunID:     runID,
		Executed:  false,
		Note:      "dry run: nothing was executed or timed",
		Config:    s.src.Path,
		Strategy:  s.cfg.Strategy,
		Platform:  s.platform.Name(),
		Target:    s.cfg.TargetPlatform,
		KernelDir: s.task.Dir,
		Problem:   s.task.ProblemPath,
		Kernel:    s.task.KernelPath,
		Entry:     string(s.task.Entry),
		Test:      s.task.TestPath,
		Options:   opts,
		LLM:       llmDesc,
		Steps:     planSteps(s.cfg),
	}
	pj, _ := json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(filepath.Join(runDir, "plan.json"), append(pj, '\n'), 0o644); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# kagent dry run %s\n\n**Nothing was executed or timed.**\n\n", runID)
	fmt.Fprintf(&md, "- kernel dir: `%s` (entry `%s`)\n- config: `%s` (strategy %s)\n- platform: %s, prompts for %s\n- LLM: %s\n\n## What a real run would do\n\n",
		s.task.Dir, s.task.Entry, s.src.Path, s.cfg.Strategy, s.platform.Name(), orDash(s.cfg.TargetPlatform), llmDesc)
	for i, step := range p.Steps {
		fmt.Fprintf(&md, "%d. %s\n", i+1, step)
	}
	if err := os.WriteFile(filepath.Join(runDir, "plan.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	// Render every prompt; ask the LLM only when one is configured.
	client, err := llmClient(s.cfg, c.String("llm-replay-match"), log)
	if err != nil {
		return err
	}
	dr, err := agent.DryRun(c.Context, agent.DryRunInput{Config: s.cfg, Task: s.task, Platform: s.platform, LLM: client, RunDir: runDir, Logger: log,
		Prompts: s.prompts})
	if err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "kagent: dry run of %s (%s, %s strategy): kernel dir loaded and checked; nothing was executed or timed.\n", s.task.Name, s.task.Entry, s.cfg.Strategy)
	fmt.Fprintf(w, "plan: %s\n", filepath.Join(runDir, "plan.md"))
	if len(dr.Prompts) > 0 {
		fmt.Fprintf(w, "prompts: %d rendered in %s", len(dr.Prompts), filepath.Join(runDir, filepath.Dir(dr.Prompts[0])))
		if len(dr.Replies) > 0 {
			fmt.Fprintf(w, " (%d sent to the LLM; replies saved beside them)", len(dr.Replies))
		} else {
			fmt.Fprint(w, " (no LLM configured: none sent)")
		}
		fmt.Fprintln(w)
	}
	return nil
}

// planSteps describes, in order, what a real run with cfg would do.
func planSteps(cfg configs.Config) []string {
	steps := []string{
		"start one warm Python worker per visible GPU (plus a warm spare)",
		"round 0: verify the input kernel (static check, 3 seeded draws, poisoned outputs, input mutation, determinism, Triton launch, extra shapes, caching)",
		"round 0: time PyTorch eager, torch.compile and the input kernel with the same method (events, L2 flush, input rotation, median)",
		"round 0: profile the input kernel and place it on the roofline",
	}
	switch cfg.Strategy {
	case configs.StrategyGreedy:
		steps = append(steps, fmt.Sprintf("rounds 1..%d: from the best kernel, diagnose the top bottleneck, rewrite, verify (refine up to %d times), time, profile, reflect", cfg.MaxRounds, cfg.RefineAttempts),
			fmt.Sprintf("stop after %d rounds without a verified improvement of more than %.0f%% and %.0fx the noise", cfg.StrategyConfig.MaxNoImprovement, cfg.MinImprovementPct, cfg.NoiseFactor))
	case configs.StrategyBeam:
		sc := cfg.StrategyConfig
		steps = append(steps, fmt.Sprintf("rounds 1..%d: keep the %d fastest distinct kernels; for each, %d different bottleneck directions: %d candidates a round, each verified (refine up to %d times), timed, profiled", cfg.MaxRounds, sc.NumTopKernels, sc.NumBottlenecks, sc.NumTopKernels*sc.NumBottlenecks, cfg.RefineAttempts),
			fmt.Sprintf("stop after %d rounds without improvement", sc.MaxNoImprovement))
	case configs.StrategyElites:
		sc := cfg.StrategyConfig
		steps = append(steps, fmt.Sprintf("rounds 1..%d: keep the fastest correct kernel of each behaviour cell (roofline class x block/warps regime); rewrite the elites of %d distinct cells along %d directions each, showing %d elites of other cells: %d candidates a round, each verified (refine up to %d times), timed, profiled", cfg.MaxRounds, sc.NumTopKernels, sc.NumBottlenecks, sc.NumInspirations, sc.NumTopKernels*sc.NumBottlenecks, cfg.RefineAttempts),
			fmt.Sprintf("stop after %d rounds without improvement", sc.MaxNoImprovement))
	case configs.StrategyTune:
		steps = append(steps, fmt.Sprintf("rounds 1..%d: find the kernel's launch and constexpr knobs and search them (no LLM)", cfg.MaxRounds))
	case configs.StrategyNoop:
		steps = append(steps, "noop strategy: no search rounds")
	}
	threshold := cfg.Roofline.ThresholdPct
	if threshold == 0 {
		threshold = 95
	}
	steps = append(steps,
		fmt.Sprintf("stop early when the best kernel reaches %.0f%% of the roofline", threshold),
		"acceptance gate: re-verify the best kernel in a fresh process with new seeds",
		"write best_kernel.py, report.md, report.json and plots to the run directory, and optimized_kernel_<strategy>.py to the kernel dir")
	return steps
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
