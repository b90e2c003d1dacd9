package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/agent/generate"
	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/suggest"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/search"
	"github.com/kagent-kernels/kagent/search/tune"
	"github.com/kagent-kernels/kagent/sweep"
)

func sweepCommand() *cli.Command {
	// withBackends (sweep_backend.go) adds --backend slurm|k8s and wraps the
	// actions below; keep this call when changing the command.
	return withBackends(&cli.Command{
		Name:  "sweep",
		Usage: "generate and optimize kernels for a set of KernelBench problems; report fast_p",
		Description: "For each selected problem (DIR/levelL/<id>_<Name>.py, or any folder of problem files with --level 0):\n" +
			"write a first kernel with the LLM unless --kernels supplies one, then optimize it. Results go to the sweep's\n" +
			"SQLite history, results.json, KernelBench's eval_results.json and baseline files, and report.md with fast_p\n" +
			"against PyTorch eager and torch.compile and fast_p.svg. Run the same command again to resume: finished\n" +
			"problems are skipped and a problem cut short continues its run.\n\n" +
			"--shard i/n runs the i-th of n slices and writes shard-i-of-n.json; `kagent sweep merge DIR` then\n" +
			"combines the shards into the report a single run would write; `kagent sweep status DIR` shows progress.\n\n" +
			"Exit codes: 0 every problem has a final result, 1 some problem ended on an error (run again to retry),\n" +
			"2 bad flags or configuration, 4 this machine lacks what the sweep needs (it stops at the first problem that shows\n" +
			"it lacks torch, triton, the OS sandbox or the LLM provider; a problem too large for the device's memory is an\n" +
			"error of its own and the sweep goes on), 130 interrupted (run again to resume).",
		Flags: slices.Concat(sweepFlags(), configFlags(), searchConfigFlags(), llmConfigFlags()),
		Subcommands: []*cli.Command{
			{
				Name: "merge", Usage: "combine the shard results of a sweep dir into results.json and the report", ArgsUsage: "DIR",
				Action: runSweepMerge,
			},
			{
				Name: "status", Usage: "show each shard's and each problem's state", ArgsUsage: "DIR",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
				Action: runSweepStatus,
			},
		},
		Action: runSweep,
	})
}

// sweepFlags are the flags of `kagent sweep` besides the configuration flags.
func sweepFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "kernelbench", Aliases: []string{"problems-dir"}, Usage: "a KernelBench checkout, or any folder of problem files (with --level 0)"},
		&cli.IntFlag{Name: "level", Value: 1, Usage: "KernelBench level: problems in DIR/levelL (or DIR/KernelBench/levelL); 0: DIR itself"},
		&cli.StringFlag{Name: "problems", Value: "all", Usage: "problem ids and ranges, e.g. 1-20,36"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "sweep dir (default: ./kagent-sweep-levelL)"},
		&cli.StringFlag{Name: "shard", Usage: "run only slice `i/n` of the problems (0 <= i < n) and write shard-i-of-n.json"},
		&cli.StringFlag{Name: "kernels", Usage: "folder of existing kernel dirs named by problem id (19, 19_ReLU, ...) to start from instead of generating"},
		&cli.IntFlag{Name: "seeds", Value: generate.DefaultSeeds, Usage: "generation seeds per problem"},
		&cli.StringFlag{Name: "entry", Value: prompts.EntryModelNew, Usage: "what generation asks for: ModelNew or kernel_function"},
		&cli.IntFlag{Name: "parallel", Usage: "problems at once (default: one per GPU slot; on the cpu platform num_workers; else 1)"},
		&cli.StringFlag{Name: "llm-record", Usage: "save every LLM exchange as a JSON file in `DIR`"},
		&cli.StringFlag{Name: "llm-replay", Usage: "serve LLM replies from a recorded `DIR` instead of calling a model"},
		&cli.StringFlag{Name: "llm-replay-match", Value: llm.MatchSimilar, Usage: "how replayed replies are matched: " + strings.Join(llm.MatchRules, ", ")},
		noProgressFlag(),
	}
}

// sweepSetup is a resolved `kagent sweep` command line: what a back-end
// needs to run the sweep here or to hand it to a cluster.
type sweepSetup struct {
	cfg       configs.Config
	dir       string
	source    string
	level     int
	selection sweep.Selection
	shard     *sweep.Shard
}

// sweepArgs reads and checks the sweep's flags and the configuration.
func sweepArgs(c *cli.Context) (*sweepSetup, error) {
	if arg := c.Args().First(); arg != "" {
		var subs []string
		for _, sub := range c.Command.Subcommands {
			subs = append(subs, sub.Name)
		}
		if s := suggest.Closest(arg, subs); s != "" {
			return nil, usageError("sweep: unexpected argument %q; did you mean \"sweep %s\"?", arg, s)
		}
		return nil, usageError("sweep: unexpected argument %q (subcommands: merge DIR, status DIR)", arg)
	}
	s := &sweepSetup{source: c.String("kernelbench"), level: c.Int("level")}
	if s.source == "" {
		return nil, usageError("--kernelbench is required: a KernelBench checkout (or, with --level 0, any folder of problem files)")
	}
	if s.level < 0 {
		return nil, usageError("--level %d: give 1, 2, 3, ... or 0 for any folder", s.level)
	}
	var err error
	if s.selection, err = sweep.ParseSelection(c.String("problems")); err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if v := c.String("shard"); v != "" {
		sh, err := sweep.ParseShard(v)
		if err != nil {
			return nil, withCode(ExitUsage, err)
		}
		s.shard = &sh
	}
	if n := c.Int("seeds"); n < 1 {
		return nil, usageError("--seeds %d: give 1 or more", n)
	}
	if e := c.String("entry"); e != prompts.EntryModelNew && e != prompts.EntryKernelFunction {
		return nil, usageError("--entry %q: give %s or %s", e, prompts.EntryModelNew, prompts.EntryKernelFunction)
	}
	s.dir = c.String("out")
	if s.dir == "" {
		s.dir = fmt.Sprintf("kagent-sweep-level%d", s.level)
	}
	s.dir = absPath(s.dir)
	if s.cfg, _, err = loadConfig(c); err != nil {
		return nil, err
	}
	if s.cfg.Python == "" {
		s.cfg.Python = defaultPython()
	}
	if err := llmFlags(c, &s.cfg); err != nil {
		return nil, err
	}
	if _, err := promptSet(s.cfg); err != nil {
		return nil, err
	}
	return s, nil
}

func runSweep(c *cli.Context) error {
	s, err := sweepArgs(c)
	if err != nil {
		return err
	}
	return localSweep(c, s)
}

// localSweep runs the sweep (or its shard) in this process.
func localSweep(c *cli.Context, s *sweepSetup) error {
	d := newDisplay(c)
	defer d.Close()
	log := logger(c)
	set, err := promptSet(s.cfg)
	if err != nil {
		return err
	}
	// One client for every problem: its concurrency cap bounds the sweep;
	// the budget applies to each problem (sweep.Local wraps it).
	shared := s.cfg
	shared.Budget = configs.BudgetConfig{}
	client, err := generationClient(shared, c.String("llm-replay-match"), log)
	if err != nil {
		return err
	}
	kernels := c.String("kernels")
	if kernels != "" {
		kernels = absPath(kernels)
	}
	if client == nil && kernels == "" {
		return withCode(ExitUsage, fmt.Errorf("sweep: %w, or give --kernels DIR of existing kernel dirs", errNoLLMForGeneration))
	}
	p, err := openPlatform(s.cfg, "sweep", platformLogger(c))
	if err != nil {
		return err
	}
	cfgYAML, err := yaml.Marshal(s.cfg)
	if err != nil {
		return fmt.Errorf("sweep: record the configuration: %w", err)
	}
	runner := &sweep.Local{Config: s.cfg, ConfigYAML: string(cfgYAML), Platform: p, LLM: client, Budget: agent.LLMConfig(s.cfg).Budget,
		Tuner: search.KnobTuner{Finder: tune.Finder{Python: s.cfg.Python}}, Python: s.cfg.Python,
		Seeds: c.Int("seeds"), Entry: c.String("entry"), Kernels: kernels, Prompts: set}
	defer runner.Close()
	// The machine's lacks stop the sweep through ctx (see lackRunner).
	ctx, stop := context.WithCancelCause(c.Context)
	defer stop(nil)
	lr := &lackRunner{Runner: runner, stop: stop}
	o := sweep.Options{Dir: s.dir, Source: s.source, Level: s.level, Selection: s.selection, Strategy: s.cfg.Strategy, Size: s.cfg.Size,
		Shard: s.shard, Runner: lr, Workers: 1, Logger: log, Progress: c.App.Writer}
	if d != nil {
		// The problems' run lines show on the status line only: a sweep's
		// output stays one line per finished problem.
		runner.Progress = lineWriter(d)
		o.Runner = &shownRunner{Runner: lr, d: d}
	}
	switch so, ok := p.(sweep.SlotOpener); {
	case c.IsSet("parallel"):
		if c.Int("parallel") < 1 {
			return usageError("--parallel %d: give 1 or more", c.Int("parallel"))
		}
		o.Workers = c.Int("parallel")
	case ok:
		o.Slots = so.Slots(c.Context)
	case p.Name() == configs.PlatformCPU:
		o.Workers = s.cfg.NumWorkers
	}
	w := c.App.Writer
	what := "sweep"
	if s.shard != nil {
		what = "shard " + s.shard.String()
	}
	fmt.Fprintf(w, "kagent: %s of %s (level %d, problems %s) on %s, strategy %s, into %s\n",
		what, s.source, s.level, s.selection, p.Name(), s.cfg.Strategy, s.dir)
	sum, err := sweep.Run(ctx, o)
	d.Close()
	// lacking: the machine lacks what every problem needs; the sweep stopped.
	lacking := c.Context.Err() == nil && context.Cause(ctx) != nil
	if err != nil && sum.Dir == "" {
		if lacking {
			return withCode(ExitUnavailable, context.Cause(ctx))
		}
		if errors.Is(err, sweep.ErrSelection) || errors.Is(err, sweep.ErrNoProblems) || errors.Is(err, sweep.ErrMismatch) {
			return withCode(ExitUsage, err)
		}
		return err
	}
	printSummary(w, sum)
	switch {
	case lacking:
		return withCode(ExitUnavailable, fmt.Errorf("sweep stopped (run the same command again to resume it): %w", context.Cause(ctx)))
	case err != nil:
		if c.Context.Err() != nil {
			fmt.Fprintf(c.App.ErrWriter, "kagent: sweep interrupted; run the same command again to resume it\n")
		}
		return err
	}
	n := sum.Count(sweep.StatusError)
	if big := lr.tooLarge(); len(big) > 0 {
		msg := fmt.Sprintf("sweep: %d problem(s) need more device memory than this machine has (%s): "+
			"time them at a smaller size or run them on a larger device", len(big), strings.Join(big, ", "))
		if note := memoryLimitNote(); note != "" {
			msg += " (" + note + ")"
		}
		return withCode(ExitUnavailable, fmt.Errorf("%s; %d other(s) ended on an error", msg, n-len(big)))
	}
	if n > 0 {
		return withCode(ExitError, fmt.Errorf("sweep: %d problem(s) ended on an error; run the same command again to retry them", n))
	}
	return nil
}

// lackRunner stops a sweep at the first problem that shows this machine
// lacks what every problem needs (torch, triton, the OS sandbox, the LLM
// provider: the errors of exit code 4) instead of failing the rest the same
// way; it notes the problems its device memory cannot hold, and the sweep
// goes on with the others.
type lackRunner struct {
	sweep.Runner
	stop context.CancelCauseFunc

	mu  sync.Mutex
	big []string // keys of the problems too large for the device
}

func (r *lackRunner) RunProblem(ctx context.Context, job sweep.Job) (sweep.ProblemResult, error) {
	res, err := r.Runner.RunProblem(ctx, job)
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	if le := asLack(err); le != nil && le.perProblem {
		r.mu.Lock()
		r.big = append(r.big, job.Problem.Key())
		r.mu.Unlock()
	} else if exitCode(err) == ExitUnavailable {
		r.stop(err)
	}
	return res, err
}

// tooLarge lists the problems the device memory could not hold, sorted.
func (r *lackRunner) tooLarge() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.big))
}

// printSummary prints what a sweep or a merge produced.
func printSummary(w io.Writer, sum sweep.Summary) {
	fmt.Fprintf(w, "\n%d of %d problems have a result: %d correct, %d failed, %d errors",
		len(sum.Results), sum.Problems, sum.Correct(), sum.Count(sweep.StatusFailed), sum.Count(sweep.StatusError))
	if sum.Skipped > 0 {
		fmt.Fprintf(w, " (%d finished before)", sum.Skipped)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "results: %s\n", sum.ResultsPath)
	if sum.ReportPath != "" {
		fmt.Fprintf(w, "report: %s\n", sum.ReportPath)
	} else if sum.Shard != "" {
		fmt.Fprintf(w, "when every shard is done: kagent sweep merge %s\n", sum.Dir)
	}
}

func runSweepMerge(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("sweep merge: give the sweep dir: kagent sweep merge DIR")
	}
	sum, err := sweep.Merge(c.Args().First(), sweep.MergeOptions{})
	if err != nil {
		if errors.Is(err, sweep.ErrNoResults) || errors.Is(err, sweep.ErrMismatch) || errors.Is(err, sweep.ErrFormat) {
			return withCode(ExitUsage, err)
		}
		return err
	}
	printSummary(c.App.Writer, sum)
	switch {
	case len(sum.MissingShards) > 0:
		return withCode(ExitError, fmt.Errorf("sweep merge: no results file of shard %s; the report counts their problems as without a result",
			strings.Join(sum.MissingShards, ", ")))
	case !sum.Complete:
		return withCode(ExitError, fmt.Errorf("sweep merge: %d of %d problems have a final result; the report counts the others as not correct",
			sum.Count(sweep.StatusDone)+sum.Count(sweep.StatusFailed), sum.Problems))
	}
	return nil
}

func runSweepStatus(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("sweep status: give the sweep dir: kagent sweep status DIR")
	}
	rep, err := sweep.ReadStatus(c.Args().First())
	if err != nil {
		if errors.Is(err, sweep.ErrNoResults) || errors.Is(err, sweep.ErrMismatch) || errors.Is(err, sweep.ErrFormat) {
			return withCode(ExitUsage, err)
		}
		return err
	}
	w := c.App.Writer
	if c.Bool("json") {
		return writeJSON(w, rep)
	}
	m := rep.Manifest
	fmt.Fprintf(w, "sweep %s: level %d, problems %s (%d), strategy %s\n\n", rep.Dir, m.Level, m.Selection, len(m.Problems), m.Strategy)
	t := newTable(w)
	t.row("FILE", "SHARD", "PROBLEMS", "FINAL", "ERRORS", "COMPLETE", "UPDATED")
	for _, f := range rep.Files {
		t.row(f.File, orDash(f.Shard), fmt.Sprint(f.Problems), fmt.Sprint(f.Final), fmt.Sprint(f.Errors), fmt.Sprint(f.Complete), stamp(f.UpdatedAt))
	}
	for _, s := range rep.MissingShards {
		t.row("-", s, "-", "-", "-", "no file yet", "-")
	}
	_ = t.flush()
	fmt.Fprintln(w)
	t = newTable(w)
	t.row("ID", "PROBLEM", "STATE", "SHARD", "HOST", "UPDATED", "DETAIL")
	for _, p := range rep.Problems {
		t.row(fmt.Sprint(p.Problem.ID), p.Problem.Name, p.State, orDash(p.Shard), orDash(p.Host), stamp(p.UpdatedAt), p.Message)
	}
	_ = t.flush()
	var counts []string
	for _, st := range []string{"done", "failed", "error", "running", "generating", "optimizing", "interrupted", "pending"} {
		if n := rep.Counts[st]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, st))
		}
	}
	fmt.Fprintf(w, "\n%s\n", strings.Join(counts, ", "))
	fmt.Fprintln(w, statusAdvice(rep))
	return nil
}

// statusAdvice is the last line of `kagent sweep status`: what to do next.
// It suggests a merge only when a shard file holds results that
// results.json lacks.
func statusAdvice(rep sweep.StatusReport) string {
	n := len(rep.Problems)
	active := rep.Counts["running"] + rep.Counts["generating"] + rep.Counts["optimizing"]
	open := n - rep.Counts[string(sweep.StatusDone)] - rep.Counts[string(sweep.StatusFailed)]
	merge := ""
	if len(rep.Unmerged) > 0 {
		verb := "hold"
		if len(rep.Unmerged) == 1 {
			verb = "holds"
		}
		merge = fmt.Sprintf("%s %s results that results.json lacks; combine them with: kagent sweep merge %s",
			strings.Join(rep.Unmerged, ", "), verb, rep.Dir)
	}
	switch {
	case active > 0:
		return fmt.Sprintf("%d of %d problems are being worked on", active, n)
	case open > 0 && merge != "":
		return fmt.Sprintf("%d of %d problems have no final result (run the sweep or its shards again to run them); %s", open, n, merge)
	case open > 0:
		return fmt.Sprintf("%d of %d problems have no final result; run the sweep or its shards again to run them", open, n)
	case merge != "":
		return "every problem has ended; " + merge
	}
	// Every problem has a final result and results.json holds them all
	// (rep.Complete).
	return "the sweep is complete; report: " + filepath.Join(rep.Dir, sweep.ReportFile)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
