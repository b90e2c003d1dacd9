package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/agent/generate"
	"github.com/kagent-kernels/kagent/agent/llm"
	runreport "github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/search"
)

func generateCommand() *cli.Command {
	return &cli.Command{
		Name:  "generate",
		Usage: "write a first Triton kernel for a PyTorch problem (KernelBench form) with an LLM",
		Description: "Asks the LLM for a kernel (class ModelNew, or kernel_function with --entry) for the problem file,\n" +
			"SEEDS times in parallel; each kernel is verified on the platform and, when rejected, sent back with the\n" +
			"named failure (up to refine_attempts times). The first that passes wins and is written, with a copy of the\n" +
			"problem, kagent.yaml and a README line, as a kernel dir that `kagent optimize --kernel-dir OUT` takes.\n\n" +
			"Exit codes: 0 a kernel passed, 1 every seed failed (each seed's last failure is listed),\n" +
			"2 bad flags, configuration or problem file, or no LLM configured, 4 this machine lacks what it needs.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "problem", Aliases: []string{"p"}, Usage: "the PyTorch problem `FILE` (class Model, get_inputs, get_init_inputs)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "kernel dir to write (default: ./NAME, the problem file's name without .py)"},
			&cli.IntFlag{Name: "seeds", Value: generate.DefaultSeeds, Usage: "independent first attempts, run in parallel"},
			&cli.StringFlag{Name: "entry", Value: prompts.EntryModelNew, Usage: "what to ask for: ModelNew or kernel_function"},
			&cli.StringFlag{Name: "llm-record", Usage: "save every LLM exchange as a JSON file in `DIR`"},
			&cli.StringFlag{Name: "llm-replay", Usage: "serve LLM replies from a recorded `DIR` instead of calling a model"},
			&cli.StringFlag{Name: "llm-replay-match", Value: llm.MatchSimilar, Usage: "how replayed replies are matched: " + strings.Join(llm.MatchRules, ", ")},
		}, slices.Concat(configFlags(), llmConfigFlags())...),
		Action: runGenerate,
	}
}

// llmFlags applies --llm-record, --llm-replay and checks --llm-replay-match.
func llmFlags(c *cli.Context, cfg *configs.Config) error {
	if c.String("llm-record") != "" && c.String("llm-replay") != "" {
		return usageError("--llm-record and --llm-replay are exclusive: record a transcript or replay one")
	}
	if m := c.String("llm-replay-match"); !slices.Contains(llm.MatchRules, m) {
		return usageError("--llm-replay-match %q: give %s", m, strings.Join(llm.MatchRules, ", "))
	}
	if d := c.String("llm-record"); d != "" {
		cfg.LLM.Record, cfg.LLM.Replay = absPath(d), ""
	}
	if d := c.String("llm-replay"); d != "" {
		cfg.LLM.Replay, cfg.LLM.Record = absPath(d), ""
	}
	return nil
}

// generationClient builds the model client that writes first kernels: as
// llmClient, whatever the strategy (tune needs no LLM, generation does).
// nil when no LLM is configured.
func generationClient(cfg configs.Config, match string, log *slog.Logger) (llm.Client, error) {
	if search.WithoutLLM(cfg.Strategy) {
		cfg.Strategy = search.Greedy
	}
	return llmClient(cfg, match, log)
}

// errNoLLMForGeneration says how to configure the model generation needs.
var errNoLLMForGeneration = fmt.Errorf("%w: set llm.model (--llm-model, KAGENT_LLM_MODEL or a config file) or replay a transcript (--llm-replay DIR)", generate.ErrNoLLM)

// openPlatform resolves the configured platform (or detects one); it must
// run kernels.
func openPlatform(cfg configs.Config, what string, log *slog.Logger) (platform.Platform, error) {
	name := cfg.PlatformName()
	var err error
	if name == "" {
		if name, err = platform.Detect(platform.SystemProbe()); err != nil {
			return nil, err
		}
	}
	p, err := platform.Open(name, platformConfig(cfg, log))
	if err != nil {
		return nil, err
	}
	if !p.Executes() {
		return nil, usageError("%s: the %s platform runs nothing, so nothing can be verified; choose cpu, cuda, rocm or xpu", what, p.Name())
	}
	return checked(p, cfg.Python, cfg.PlatformKwargs), nil
}

func runGenerate(c *cli.Context) error {
	problem := c.String("problem")
	if problem == "" {
		return usageError("--problem is required: the PyTorch problem file (class Model, get_inputs, get_init_inputs)")
	}
	if st, err := os.Stat(problem); err != nil || st.IsDir() {
		return usageError("--problem %s: not a file", problem)
	}
	if n := c.Int("seeds"); n < 1 {
		return usageError("--seeds %d: give 1 or more", n)
	}
	if e := c.String("entry"); e != prompts.EntryModelNew && e != prompts.EntryKernelFunction {
		return usageError("--entry %q: give %s or %s", e, prompts.EntryModelNew, prompts.EntryKernelFunction)
	}
	cfg, _, err := loadConfig(c)
	if err != nil {
		return err
	}
	if cfg.Python == "" {
		cfg.Python = defaultPython()
	}
	if err := llmFlags(c, &cfg); err != nil {
		return err
	}
	set, err := promptSet(cfg)
	if err != nil {
		return err
	}
	out := c.String("out")
	if out == "" {
		out = strings.TrimSuffix(filepath.Base(problem), filepath.Ext(problem))
	}
	out = absPath(out)
	if generate.HasKernel(out) {
		return usageError("--out %s already holds a kernel (input.py or kernel.py); choose another folder or remove it", out)
	}
	log := logger(c)
	client, err := generationClient(cfg, c.String("llm-replay-match"), log)
	if err != nil {
		return err
	}
	if client == nil {
		return withCode(ExitUsage, fmt.Errorf("generate: %w", errNoLLMForGeneration))
	}
	p, err := openPlatform(cfg, "generate", platformLogger(c))
	if err != nil {
		return err
	}
	if err := generate.Prepare(out, problem, ""); err != nil {
		return withCode(ExitUsage, err)
	}
	task, err := kerneldir.Load(c.Context, out, kerneldir.LoadOptions{Python: cfg.Python})
	if err != nil {
		return err
	}
	st, err := store.Open(c.Context, filepath.Join(out, ".kagent", "history.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	sess, err := p.Open(c.Context, task)
	if err != nil {
		return err
	}
	defer sess.Close()
	w := c.App.Writer
	fmt.Fprintf(w, "kagent: generating a kernel for %s on %s: %d seeds, up to %d refinements each\n",
		filepath.Base(problem), p.Name(), c.Int("seeds"), cfg.RefineAttempts)
	res, err := generate.Run(c.Context, generate.Input{Config: cfg, Task: task, Platform: p, Session: sess, LLM: client,
		Seeds: c.Int("seeds"), Entry: c.String("entry"), Store: st, Progress: w, Logger: log, Prompts: set})
	var af *generate.AllFailedError
	switch {
	case errors.As(err, &af):
		t := newTable(w)
		t.row("SEED", "KERNELS", "LAST FAILURE")
		for _, s := range af.Seeds {
			t.row(fmt.Sprint(s.Seed), fmt.Sprint(len(s.Attempts)), s.Last())
		}
		_ = t.flush()
		fmt.Fprintf(w, "prompts, replies and verdicts: %s\n", res.Dir)
		return withCode(ExitError, err)
	case err != nil:
		return err
	}
	if err := generate.WriteKernelDir(out, problem, res); err != nil {
		return err
	}
	fmt.Fprintf(w, "kagent: %s (seed %d of %d) passed verification after %d kernel(s)", res.Winner.ID, res.Winner.Seed, len(res.Seeds), res.Kernels())
	if res.Usage.Calls > 0 {
		fmt.Fprintf(w, "; llm: %d calls, %d tokens%s, $%.2f", res.Usage.Calls, res.Usage.PromptTokens+res.Usage.CompletionTokens,
			runreport.EstimatedTag(res.Usage.EstimatedCalls, res.Usage.Calls), res.Usage.CostUSD)
	}
	fmt.Fprintf(w, "\nkernel dir: %s\nnext: kagent optimize --kernel-dir %s\n", out, out)
	return nil
}
