package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/agent/generate"
	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/atomicfile"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/search"
)

// SlotOpener is implemented by platforms that can bind a session to one
// device slot (one GPU), so that a sweep runs one problem per GPU instead of
// spreading every problem over all of them. The sweep finds it by type
// assertion on the platform.
type SlotOpener interface {
	// Slots lists the device slots of this machine (GPU ids).
	Slots(ctx context.Context) []string
	// OpenSlot opens a session that runs only on the given slot.
	OpenSlot(ctx context.Context, task *kerneldir.Task, slot string) (platform.Session, error)
}

// Reopener is implemented by sessions that can be bound to another problem
// without starting their workers again; the sweep keeps such sessions
// between problems of the same slot.
type Reopener interface {
	Reopen(ctx context.Context, task *kerneldir.Task) error
}

// Origins of a problem's first kernel.
const (
	OriginGenerated = "generated"
	OriginSupplied  = "supplied"
)

// Local is the Runner that does a problem's work in this process: one
// platform session per problem (on the job's slot when the platform is a
// SlotOpener), shared by generation and optimization so that the problem's
// inputs are built on the device once per worker, and reopened on the slot's
// next problem when the session is a Reopener (warm workers and CUDA
// contexts are kept; call Close at the end); the first kernel copied
// from Kernels or generated (when the problem's kernel dir has none yet);
// then the optimization loop (agent.Run, or agent.Resume of a run the store
// holds unfinished). The result is read back from the store, so a problem
// whose run finished before a kill gets the same result as one that did not.
type Local struct {
	// Config is the resolved configuration of every problem's run.
	Config     configs.Config
	ConfigYAML string
	Platform   platform.Platform
	// LLM is shared by every problem (its concurrency cap bounds the whole
	// sweep); nil when none is configured (then only problems with a
	// supplied kernel can run, under the tune strategy).
	LLM llm.Client
	// Budget caps each problem's LLM spend, generation and optimization
	// together.
	Budget  llm.Limits
	Prompts *prompts.Set
	Tuner   search.Tuner
	// Python runs the kernel dir's static check ("": python3).
	Python string
	// Seeds and Entry tune generation (generate.Input).
	Seeds int
	Entry string
	// Kernels is a folder of kernel dirs named by problem id ("19",
	// "19_ReLU", "019_relu"); a problem with one starts from its kernel
	// instead of a generated one.
	Kernels string
	// Progress receives the loop's progress lines (nil: none).
	Progress io.Writer

	mu sync.Mutex
	// idle holds, by slot, sessions whose problem has finished, to be
	// reopened on the slot's next problem; Close closes them.
	idle map[string][]platform.Session
}

// Close closes the sessions kept between problems.
func (l *Local) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, ss := range l.idle {
		for _, s := range ss {
			errs = append(errs, s.Close())
		}
	}
	l.idle = nil
	return errors.Join(errs...)
}

// RunProblem runs one problem: see Local.
func (l *Local) RunProblem(ctx context.Context, job Job) (ProblemResult, error) {
	if err := l.supply(job); err != nil {
		return ProblemResult{}, err
	}
	if l.LLM == nil && !generate.HasKernel(job.Dir) {
		return ProblemResult{}, fmt.Errorf("generate: %w: %s has no kernel to start from (give --kernels or configure an LLM)", generate.ErrNoLLM, job.Problem.File)
	}
	if err := generate.Prepare(job.Dir, job.Problem.Path, job.Problem.Key()); err != nil {
		return ProblemResult{}, err
	}
	task, cfg, err := l.load(ctx, job.Dir, false)
	if err != nil {
		return ProblemResult{}, err
	}
	sess, err := l.open(ctx, task, job.Slot)
	if err != nil {
		return ProblemResult{}, err
	}
	defer l.keep(job.Slot, sess)
	var client llm.Client
	if l.LLM != nil {
		client = llm.NewMeter(l.LLM, l.Budget)
	}

	if !generate.HasKernel(job.Dir) {
		job.Phase("generating", "")
		gid, err := l.generationID(ctx, job)
		if err != nil {
			return ProblemResult{}, err
		}
		gres, err := generate.Run(ctx, generate.Input{Config: cfg, Task: task, Platform: l.Platform, Session: sess,
			LLM: client, Prompts: l.Prompts, Seeds: l.Seeds, Entry: l.Entry, Store: job.Store, RunID: gid,
			Dir: filepath.Join(job.RunDir, "generate", gid), Logger: job.Logger})
		var af *generate.AllFailedError
		switch {
		case errors.As(err, &af):
			res, rerr := l.result(ctx, job)
			res.Status, res.Error = StatusFailed, oneLine(err.Error())
			return res, rerr
		case err != nil:
			return ProblemResult{}, err
		}
		if err := generate.WriteKernelDir(job.Dir, job.Problem.Path, gres); err != nil {
			return ProblemResult{}, err
		}
	}

	task, cfg, err = l.load(ctx, job.Dir, true)
	if err != nil {
		return ProblemResult{}, err
	}
	job.Phase("optimizing", "")
	in := agent.RunInput{Config: cfg, ConfigYAML: l.ConfigYAML, Task: task, Platform: l.Platform, Session: sess,
		Store: job.Store, Budget: l.Budget, Prompts: l.Prompts, Tuner: l.Tuner, RunDir: job.RunDir, RunID: job.RunID,
		Progress: l.Progress, WriteOptimized: true, Logger: job.Logger}
	if !search.WithoutLLM(l.Config.Strategy) {
		in.LLM = client
	}
	detail, err := job.Store.GetRun(ctx, job.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		_, err = agent.Run(ctx, in)
	case err != nil:
		return ProblemResult{}, err
	case detail.Status != store.RunFinished:
		job.Logger.Info("resuming the problem's optimization run", "run", job.RunID, "was", detail.Status)
		_, err = agent.Resume(ctx, in, job.RunID)
	}
	var ir *agent.InputRejectedError
	if err != nil && !errors.As(err, &ir) {
		return ProblemResult{}, err
	}
	return l.result(ctx, job)
}

// load loads a problem's kernel dir at the sweep's timed shape (the config's
// size, or the dir's "cpu" size on the cpu platform when none is given) and
// returns the problem's config, which records the shape chosen.
func (l *Local) load(ctx context.Context, dir string, requireKernel bool) (*kerneldir.Task, configs.Config, error) {
	cfg := l.Config
	task, err := kerneldir.Load(ctx, dir, kerneldir.LoadOptions{Python: l.Python, RequireKernel: requireKernel})
	if err != nil {
		return nil, cfg, err
	}
	cfg.Size, err = task.ChooseSize(cfg.Size, l.Platform.Name() == configs.PlatformCPU)
	return task, cfg, err
}

// open binds a session to the problem, on the job's slot if there is one:
// a kept session of the slot reopened on it, else a new one.
func (l *Local) open(ctx context.Context, task *kerneldir.Task, slot string) (platform.Session, error) {
	for {
		l.mu.Lock()
		ss := l.idle[slot]
		if len(ss) == 0 {
			l.mu.Unlock()
			break
		}
		sess := ss[len(ss)-1]
		l.idle[slot] = ss[:len(ss)-1]
		l.mu.Unlock()
		err := sess.(Reopener).Reopen(ctx, task)
		if err == nil {
			return sess, nil
		}
		_ = sess.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if so, ok := l.Platform.(SlotOpener); ok && slot != "" {
		return so.OpenSlot(ctx, task, slot)
	}
	return l.Platform.Open(ctx, task)
}

// supply copies the problem's kernel dir from Kernels into its work dir,
// unless the work dir has a kernel already.
func (l *Local) supply(job Job) error {
	if l.Kernels == "" || generate.HasKernel(job.Dir) {
		return nil
	}
	src, err := findKernelDir(l.Kernels, job.Problem.ID)
	if err != nil || src == "" {
		return err
	}
	if err := os.MkdirAll(job.Dir, 0o755); err != nil {
		return fmt.Errorf("supply kernel: %w", err)
	}
	// The kernel last: its presence means the copy is whole.
	for _, f := range []string{kerneldir.OptionsFile, kerneldir.TestFile, kerneldir.KernelFile, kerneldir.InputFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("supply kernel: %w", err)
		}
		if err := atomicfile.Write(filepath.Join(job.Dir, f), b, 0o644); err != nil {
			return fmt.Errorf("supply kernel: %w", err)
		}
	}
	job.Logger.Info("starting from a supplied kernel", "from", src)
	return nil
}

var leadingID = regexp.MustCompile(`^0*(\d+)(?:_|$)`)

// findKernelDir finds the kernel dir of problem id in dir: a folder named
// "<id>" or "<id>_<anything>" (leading zeros allowed) holding input.py or
// kernel.py. "" when there is none.
func findKernelDir(dir string, id int) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("supply kernel: --kernels: %w", err)
	}
	var found []string
	for _, e := range entries {
		m := leadingID.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		if n, err := strconv.Atoi(m[1]); err == nil && n == id && generate.HasKernel(filepath.Join(dir, e.Name())) {
			found = append(found, e.Name())
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return filepath.Join(dir, found[0]), nil
	}
	slices.Sort(found)
	return "", fmt.Errorf("supply kernel: %s holds several kernel dirs for problem %d: %s", dir, id, strings.Join(found, ", "))
}

// generationID names the problem's next generation run and ends earlier
// ones a killed process left running.
func (l *Local) generationID(ctx context.Context, job Job) (string, error) {
	runs, err := job.Store.ListRuns(ctx, store.RunFilter{KernelDir: job.Dir})
	if err != nil {
		return "", err
	}
	n := 0
	for _, r := range runs {
		if r.Strategy != generate.Strategy {
			continue
		}
		n++
		if r.Status == store.RunRunning {
			if err := job.Store.FinishRun(ctx, r.ID, store.RunInterrupted, "superseded: the generation starts again"); err != nil {
				return "", err
			}
		}
	}
	return fmt.Sprintf("%s-gen%d", job.RunID, n+1), nil
}

// failuresOfCompile are the verification failures of a kernel that did not
// get as far as running (KernelBench's "compiled" is false).
var failuresOfCompile = []string{"static", "import", "entry", "extract"}

// result reads the problem's result from the store: its generation runs and
// its optimization run.
func (l *Local) result(ctx context.Context, job Job) (ProblemResult, error) {
	// A kernel the sweep did not generate was supplied.
	res := ProblemResult{Status: StatusDone, Origin: OriginSupplied}
	runs, err := job.Store.ListRuns(ctx, store.RunFilter{KernelDir: job.Dir})
	if err != nil {
		return res, err
	}
	var usage store.Totals
	compiled := false
	for _, r := range slices.Backward(runs) { // oldest first
		if r.Strategy != generate.Strategy {
			continue
		}
		d, err := job.Store.GetRun(ctx, r.ID)
		if err != nil {
			return res, err
		}
		g := &GenerationSummary{RunID: r.ID}
		failed := map[int]string{}
		for _, c := range d.Candidates {
			if c.Verdict == nil {
				continue
			}
			g.Kernels++
			seed := 0
			fmt.Sscanf(c.ID, "s%d", &seed)
			g.Seeds = max(g.Seeds, seed)
			if c.Verdict.Passed && c.Status == store.StatusVerified {
				g.Winner = c.ID
			} else {
				failed[seed] = c.Verdict.Failure + ": " + c.Verdict.Reason
			}
			compiled = compiled || c.Verdict.Passed || !slices.Contains(failuresOfCompile, c.Verdict.Failure)
		}
		for s := 1; s <= g.Seeds; s++ {
			if f, ok := failed[s]; ok && g.Winner == "" {
				g.Failures = append(g.Failures, fmt.Sprintf("seed %d: %s", s, clip(f, 200)))
			}
		}
		res.Generation = g
		res.Origin = OriginGenerated
		u, err := job.Store.LLMUsage(ctx, r.ID)
		if err != nil {
			return res, err
		}
		usage = usage.Plus(u.Totals)
	}
	res.Compiled = compiled
	d, err := job.Store.GetRun(ctx, job.RunID)
	if errors.Is(err, store.ErrNotFound) {
		res.LLM = usageOf(usage)
		return res, nil // no optimization run: the generation failed
	}
	if err != nil {
		return res, err
	}
	u, err := job.Store.LLMUsage(ctx, job.RunID)
	if err != nil {
		return res, err
	}
	res.LLM = usageOf(usage.Plus(u.Totals))
	res.RunID, res.StopReason, res.Platform, res.Device = d.ID, d.StopReason, d.Platform, d.Device
	res.Eager, res.Compile, res.Input = TimingOf(d.Baselines.Eager), TimingOf(d.Baselines.Compile), TimingOf(d.Baselines.Input)
	if t := d.Baselines.Eager; t != nil {
		res.EagerUnavailable = t.Unavailable
	}
	if t := d.Baselines.Compile; t != nil {
		res.CompileUnavailable = t.Unavailable
	}
	for _, c := range d.Candidates {
		switch {
		case c.ID == d.BestID && c.Status.Measured() && d.Status == store.RunFinished:
			res.Kernel, res.Correct, res.Improved = TimingOf(c.Timing), true, c.ID != d.InputID
			res.Representative = c.Timing != nil && c.Timing.Representative
			res.Compiled = true
		case c.ID == d.InputID && c.Status == store.StatusRejected && c.Verdict != nil:
			res.Status = StatusFailed
			res.Error = fmt.Sprintf("the first kernel failed verification: %s: %s", c.Verdict.Failure, c.Verdict.Reason)
			if c.Verdict.Failure == "oom" {
				res.Error += " (" + agent.InputAdvice(c.Verdict.Failure) + ")"
			}
			res.Compiled = res.Compiled || !slices.Contains(failuresOfCompile, c.Verdict.Failure)
		}
	}
	if !res.Correct && res.Status == StatusDone {
		res.Status, res.Error = StatusError, fmt.Sprintf("the optimization run %s ended %s: %s", d.ID, d.Status, d.StopReason)
	}
	return res, nil
}

func usageOf(t store.Totals) Usage {
	return Usage{Calls: t.Calls, Tokens: t.PromptTokens + t.CompletionTokens, EstimatedCalls: t.EstimatedCalls,
		CostUSD: finite(t.CostUSD), Seconds: t.Duration.Seconds()}
}

// Interface guards
var _ Runner = (*Local)(nil)

// keep holds a problem's session for the slot's next problem when it can be
// reopened, and closes it otherwise.
func (l *Local) keep(slot string, sess platform.Session) {
	if _, ok := sess.(Reopener); !ok {
		_ = sess.Close()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle == nil {
		l.idle = map[string][]platform.Session{}
	}
	l.idle[slot] = append(l.idle[slot], sess)
}
