package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/kagent-dev/kagent/agent/kerneldir"
	"github.com/kagent-dev/kagent/configs"
	"github.com/kagent-dev/kagent/platform"
)

func optimizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "optimize",
		Usage: "optimize the Triton kernel of a kernel dir",
		Description: "Loads the kernel dir (problem.py, input.py or kernel.py, optional test.py and kagent.yaml),\n" +
			"verifies and times the input kernel, then searches for faster verified rewrites.\n" +
			"With --strategy noop nothing is executed: the plan is written to the run directory.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "kernel-dir", Aliases: []string{"k"}, Usage: "folder holding problem.py and input.py (or kernel.py)"},
			&cli.StringFlag{Name: "out", Usage: "run directory (default: KERNEL_DIR/.kagent/runs/RUN_ID)"},
		}, configFlags()...),
		Action: runOptimize,
	}
}

// runSetup is what every command that works on a kernel dir starts from.
type runSetup struct {
	cfg      configs.Config
	src      configs.Source
	task     *kerneldir.Task
	platform platform.Platform
}

// setup loads the config, the kernel dir and the platform, in that order, so
// the first error is the one the user must fix first.
func setup(c *cli.Context) (*runSetup, error) {
	cfg, src, err := loadConfig(c)
	if err != nil {
		return nil, err
	}
	if cfg.Python == "" {
		cfg.Python = defaultPython()
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
	p, err := platform.Open(name, platformConfig(cfg))
	if err != nil {
		return nil, err
	}
	return &runSetup{cfg: cfg, src: src, task: task, platform: p}, nil
}

// platformConfig extracts what a platform needs from the run configuration.
func platformConfig(cfg configs.Config) platform.Config {
	return platform.Config{
		Python:         cfg.Python,
		GPUName:        cfg.GPUName,
		SpecsFile:      cfg.SpecsFile,
		Kwargs:         cfg.PlatformKwargs,
		NCUPath:        cfg.NCUBinPath,
		VerifyTimeout:  cfg.Timeouts.Verify,
		BenchTimeout:   cfg.Timeouts.Bench,
		ProfileTimeout: cfg.Timeouts.Profile,
		WarmupMS:       cfg.BenchmarkWarmup,
		RepMS:          cfg.BenchmarkRepeat,
	}
}

func runOptimize(c *cli.Context) error {
	s, err := setup(c)
	if err != nil {
		return err
	}
	runID := newRunID(time.Now())
	runDir := c.String("out")
	if runDir == "" {
		runDir = filepath.Join(s.task.Dir, ".kagent", "runs", runID)
	}
	if !s.platform.Executes() || s.cfg.Strategy == configs.StrategyNoop {
		return dryRun(c, s, runID, runDir)
	}
	sess, err := s.platform.Open(c.Context, s.task)
	if err != nil {
		return err
	}
	defer sess.Close()
	return &platform.NotImplementedError{Platform: s.platform.Name(), What: "the optimization loop (use `kagent eval`)"}
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

func dryRun(c *cli.Context, s *runSetup, runID, runDir string) error {
	if err := os.MkdirAll(filepath.Join(runDir, "input"), 0o755); err != nil {
		return fmt.Errorf("create run dir: %w", err)
	}
	for _, p := range []string{s.task.ProblemPath, s.task.KernelPath, s.task.TestPath, s.task.OptionsPath} {
		if p == "" {
			continue
		}
		if err := copyFile(p, filepath.Join(runDir, "input", filepath.Base(p))); err != nil {
			return err
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
	llm := "none: the tune strategy needs no LLM"
	if s.cfg.Strategy != configs.StrategyTune {
		model := s.cfg.LLM.Model
		if model == "" {
			model = "(no model configured: set llm.model or --llm-model)"
		}
		llm = s.cfg.LLM.Provider + " " + model
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
		LLM:       llm,
		Steps:     planSteps(s.cfg),
	}
	pj, _ := json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(filepath.Join(runDir, "plan.json"), append(pj, '\n'), 0o644); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# kagent dry run %s\n\n**Nothing was executed or timed.**\n\n", runID)
	fmt.Fprintf(&md, "- kernel dir: `%s` (entry `%s`)\n- config: `%s` (strategy %s)\n- platform: %s, prompts for %s\n- LLM: %s\n\n## What a real run would do\n\n",
		s.task.Dir, s.task.Entry, s.src.Path, s.cfg.Strategy, s.platform.Name(), orDash(s.cfg.TargetPlatform), llm)
	for i, step := range p.Steps {
		fmt.Fprintf(&md, "%d. %s\n", i+1, step)
	}
	if err := os.WriteFile(filepath.Join(runDir, "plan.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("write plan: %w", err)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "kagent: dry run of %s (%s, %s strategy): kernel dir loaded and checked; nothing was executed or timed.\n", s.task.Name, s.task.Entry, s.cfg.Strategy)
	fmt.Fprintf(w, "plan: %s\n", filepath.Join(runDir, "plan.md"))
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

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
