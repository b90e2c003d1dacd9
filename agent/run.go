package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/roofline"
	"github.com/kagent-kernels/kagent/search"
)

// StoreEventRunDir is the kind of the store event that records a run's
// artifact dir (data: {"dir": ...}); readers of a history (kagent ui) find
// the run's files through it.
const StoreEventRunDir = "agent.run_dir"

// Loop events the agent records in the store, beside the store's own.
const (
	storeEventRunDir     = StoreEventRunDir
	storeEventPromotion  = "agent.promotion"  // data: Decision
	storeEventReflection = "agent.reflection" // data: reflectionRecord
	storeEventGate       = "agent.acceptance" // data: platform.Verdict of the gate
)

// loop is one run in progress.
type loop struct {
	// pipeline takes one candidate through its steps and records them.
	*pipeline
	// prop makes the candidates of the slots and their repairs (the LLM
	// steps) and keeps the LLM budget.
	prop   *proposer
	device string
	// isolation is how the session keeps candidates from the judge.
	isolation string
	strat     search.Strategy
	polish    search.Strategy // nil: no polish phase

	// Changed between rounds only.
	state          search.State
	bestID         string // the current best (the store's Run.BestID)
	input          store.Candidate
	eager, compile *platform.Timing
	exhausted      string // a strategy with nothing left to propose
	searchStop     string // why the search phase ended (before a polish)
	events         io.Closer
	scr            *screener // the strategy's screens (nil: none)
}

// Run optimizes the kernel of in.Task: round 0, then search rounds until a
// stop rule fires, then the acceptance gate and the artifacts. The run and
// every step of it are recorded in in.Store. The returned error is nil when
// the run finished (with or without an improvement: see Result.Improved); a
// cancelled ctx leaves the run interrupted and resumable.
func Run(ctx context.Context, in RunInput) (Result, error) {
	in.defaults()
	if err := in.check(); err != nil {
		return Result{}, err
	}
	l, err := newLoop(ctx, in)
	if err != nil {
		return Result{}, err
	}
	run, err := l.st.CreateRun(ctx, store.Run{
		ID: in.RunID, KernelDir: in.Task.Dir, Problem: in.Task.Name, Strategy: l.cfg.Strategy,
		Platform: in.Platform.Name(), Device: l.device, ConfigYAML: in.ConfigYAML, InputID: store.InputID,
	})
	if err != nil {
		return Result{}, fmt.Errorf("start run: %w", err)
	}
	l.runID = run.ID
	if err := l.recordProblem(ctx); err != nil {
		_ = l.st.FinishRun(context.WithoutCancel(ctx), run.ID, store.RunFailed, err.Error())
		return Result{}, fmt.Errorf("start run: %w", err)
	}
	dir := in.RunDir
	if dir == "" {
		dir = defaultRunDir(in.Task.Dir, run.ID)
	}
	if err := l.openRunDir(ctx, dir); err != nil {
		_ = l.st.FinishRun(context.WithoutCancel(ctx), run.ID, store.RunFailed, err.Error())
		return Result{}, err
	}
	if err := l.art.copyInputs(in.Task); err != nil {
		return l.fail(ctx, err)
	}
	if in.ConfigYAML != "" {
		if err := l.art.write("config.yaml", []byte(in.ConfigYAML)); err != nil {
			return l.fail(ctx, err)
		}
	}
	return l.drive(ctx, nil)
}

// Resume continues a run that stopped early (killed, interrupted or
// failed): finished rounds are skipped whole; in the open round, recorded
// candidates continue from their last recorded step (none is timed again)
// and replies already saved in the run dir are reused. in must describe the
// same kernel dir; its RunDir, when empty, is the one the run recorded.
func Resume(ctx context.Context, in RunInput, runID string) (Result, error) {
	in.defaults()
	if err := in.check(); err != nil {
		return Result{}, err
	}
	rs, err := in.Store.ResumeState(ctx, runID)
	if err != nil {
		return Result{}, fmt.Errorf("resume run %s: %w", runID, err)
	}
	l, err := newLoop(ctx, in)
	if err != nil {
		return Result{}, err
	}
	switch {
	case rs.Run.Status == store.RunFinished:
		return Result{}, fmt.Errorf("resume run %s: %w: it finished (%s)", runID, ErrNotResumable, rs.Run.StopReason)
	case filepath.Clean(rs.Run.KernelDir) != filepath.Clean(in.Task.Dir):
		return Result{}, fmt.Errorf("resume run %s: %w: it optimizes %s, not %s", runID, ErrNotResumable, rs.Run.KernelDir, in.Task.Dir)
	case rs.Run.Strategy != l.cfg.Strategy:
		return Result{}, fmt.Errorf("resume run %s: %w: it ran strategy %s, not %s", runID, ErrNotResumable, rs.Run.Strategy, l.cfg.Strategy)
	}
	l.runID, l.prop.resumed, l.prop.prior = runID, true, rs.Usage
	if err := l.checkProblem(ctx); err != nil {
		return Result{}, err
	}
	if err := l.st.ReopenRun(ctx, runID); err != nil {
		return Result{}, fmt.Errorf("resume run %s: %w", runID, err)
	}
	dir := in.RunDir
	if dir == "" {
		dir = l.recordedRunDir(ctx)
	}
	if dir == "" {
		dir = defaultRunDir(in.Task.Dir, runID)
	}
	if err := l.openRunDir(ctx, dir); err != nil {
		return l.fail(ctx, err)
	}
	return l.drive(ctx, rs)
}

func newLoop(ctx context.Context, in RunInput) (*loop, error) {
	cfg := in.Config
	if !cfg.LLM.Configured() && in.LLM == nil && search.NeedsLLM(cfg.Strategy) {
		// Without an LLM the tune strategy proposes (DESIGN §7).
		in.Logger.Info("no llm configured: the tune strategy proposes", "strategy", cfg.Strategy)
		cfg.Strategy = configs.StrategyTune
	}
	if search.NeedsLLM(cfg.Strategy) && in.LLM == nil {
		return nil, fmt.Errorf("%w: strategy %s needs an llm client", ErrNoProposer, cfg.Strategy)
	}
	pl := &pipeline{in: in, cfg: cfg, st: in.Store, log: in.Logger}
	l := &loop{pipeline: pl, prop: &proposer{pipeline: pl}}
	strat, err := search.New(cfg.Strategy, cfg.SearchSettings(), withScreener(l, in.Tuner, in.Session))
	switch {
	case errors.Is(err, search.ErrNoTuner):
		return nil, fmt.Errorf("%w: %v", ErrNoProposer, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	l.strat = strat
	if cfg.StrategyConfig.PolishRounds > 0 && in.Tuner != nil && search.NeedsLLM(cfg.Strategy) {
		if l.polish, err = search.NewTune(cfg.SearchSettings(), in.Tuner); err != nil {
			return nil, err
		}
	}
	about := in.Session.About()
	l.device, l.isolation = about.Device, about.Isolation
	specs, err := platform.SpecsOf(ctx, in.Platform, in.Session)
	if err != nil {
		l.log.Warn("gpu specs unavailable: no roofline peaks", "err", err)
	}
	l.specs = specs
	l.prop.target = prompts.NewTarget(cfg.TargetPlatform, in.Platform.Name(), in.Platform.Executes(), l.specs,
		string(in.Task.Entry), in.Task.Options.TF32)
	return l, nil
}

// openRunDir creates the run dir, records it in the store and starts the
// events file.
func (l *loop) openRunDir(ctx context.Context, dir string) error {
	art, err := newArtifacts(dir)
	if err != nil {
		return err
	}
	l.art = art
	f, err := os.OpenFile(art.path("events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open events file: %w", err)
	}
	l.events = f
	l.ev = &emitter{json: []io.Writer{f}, progress: l.in.Progress, now: l.in.Now, runID: l.runID}
	if l.in.Events != nil {
		l.ev.json = append(l.ev.json, l.in.Events)
	}
	data, _ := json.Marshal(map[string]string{"dir": art.dir})
	if _, err := l.st.AddEvent(ctx, store.Event{RunID: l.runID, Round: store.NoRound, Kind: storeEventRunDir, Message: art.dir, Data: data}); err != nil {
		return err
	}
	return nil
}

// recordedRunDir is the last run dir the store recorded for the run.
func (l *loop) recordedRunDir(ctx context.Context) string {
	evs, err := l.st.Events(ctx, l.runID, 0, 0)
	if err != nil {
		return ""
	}
	dir := ""
	for _, e := range evs {
		if e.Kind == storeEventRunDir {
			var d struct{ Dir string }
			if json.Unmarshal(e.Data, &d) == nil && d.Dir != "" {
				dir = d.Dir
			}
		}
	}
	return dir
}

// drive runs round 0 (or restores it), the search rounds and the finish.
func (l *loop) drive(ctx context.Context, rs *store.ResumeState) (Result, error) {
	defer l.events.Close()
	l.ev.emit(Event{Event: EventRunStarted, KernelDir: l.in.Task.Dir, Strategy: l.cfg.Strategy,
		Platform: l.in.Platform.Name(), Device: l.device, RunDir: l.art.dir, Resumed: rs != nil})
	if err := l.restore(ctx, rs); err != nil {
		return l.fail(ctx, err)
	}
	if rs == nil || rs.LastFinished < 0 {
		if err := l.round0(ctx); err != nil {
			return l.fail(ctx, err)
		}
	}
	// A round the killed run left open is finished first, whatever the stop
	// rules say: its candidates must be settled.
	open := rs != nil && rs.Open != nil && rs.Open.Index > 0
	for {
		if open {
			if err := l.runRound(ctx, rs.Open.Index, true); err != nil {
				return l.fail(ctx, err)
			}
			open = false
			continue
		}
		if l.current().Directions() > 0 {
			_ = l.prop.budgetLeft() // a spent budget stops the run before a round it cannot feed
		}
		reason := l.stopReason()
		if reason != "" && l.enterPolish(reason) {
			reason = ""
		}
		if reason != "" {
			if l.searchStop != "" && l.state.Phase == search.PhasePolish {
				reason = l.searchStop + "; polish: " + reason
			}
			return l.finish(ctx, reason)
		}
		if err := ctx.Err(); err != nil {
			return l.fail(ctx, err)
		}
		if err := l.runRound(ctx, l.nextRound(ctx), false); err != nil {
			return l.fail(ctx, err)
		}
	}
}

// nextRound is the index of the next round to run.
func (l *loop) nextRound(ctx context.Context) int {
	detail, err := l.st.GetRun(ctx, l.runID)
	if err != nil || len(detail.Rounds) == 0 {
		return 1
	}
	last := detail.Rounds[len(detail.Rounds)-1]
	if !last.Finished() {
		return last.Index
	}
	return last.Index + 1
}

// restore reads what a resumed run had reached: baselines, the input, the
// state after the last finished round and the current best.
func (l *loop) restore(ctx context.Context, rs *store.ResumeState) error {
	l.state = search.State{BestID: store.InputID, Phase: search.PhaseSearch}
	if rs == nil {
		return nil
	}
	l.eager, l.compile = rs.Run.Baselines.Eager, rs.Run.Baselines.Compile
	for i := len(rs.Rounds) - 1; i >= 0; i-- {
		r := rs.Rounds[i]
		if r.Finished() && len(r.State) > 0 {
			if err := json.Unmarshal(r.State, &l.state); err != nil {
				return fmt.Errorf("resume: round %d state: %w", r.Index, err)
			}
			break
		}
	}
	if in, err := l.st.Candidate(ctx, l.runID, store.InputID); err == nil {
		l.input = in
	}
	l.bestID = rs.Run.BestID
	if l.bestID == "" {
		l.bestID = l.state.BestID
	}
	if l.state.SearchStop != "" {
		l.searchStop = l.state.SearchStop
	}
	return nil
}

// fail records why the run stopped and returns the error: interrupted (a
// cancelled ctx) or failed.
func (l *loop) fail(ctx context.Context, err error) (Result, error) {
	status, reason := store.RunFailed, oneLine(err.Error())
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		status, reason = store.RunInterrupted, store.InterruptReason(ctx)
	}
	var ir *InputRejectedError
	if errors.As(err, &ir) {
		status = store.RunFinished
	}
	bg := context.WithoutCancel(ctx)
	if ferr := l.st.FinishRun(bg, l.runID, status, reason); ferr != nil {
		l.log.Warn("record the run's end", "err", ferr)
	}
	res := l.result(bg, status, reason)
	if l.ev != nil {
		l.ev.emit(l.finishedEvent(res))
	}
	return res, err
}

// round0 verifies, times and profiles the input kernel and times the
// PyTorch baselines. Every step is skipped when the store has it already.
func (l *loop) round0(ctx context.Context) error {
	detail, err := l.st.GetRun(ctx, l.runID)
	if err != nil {
		return err
	}
	if len(detail.Rounds) == 0 {
		if err := l.st.StartRound(ctx, l.runID, 0); err != nil {
			return err
		}
	}
	l.ev.emit(Event{Event: EventRoundStarted, Round: ptr(0), Slots: 1})
	c, err := l.st.Candidate(ctx, l.runID, store.InputID)
	if errors.Is(err, store.ErrNotFound) {
		c, err = l.st.AddCandidate(ctx, store.Candidate{RunID: l.runID, ID: store.InputID, Round: 0, Source: l.in.Task.KernelSource, Direction: "input kernel"})
	}
	if err != nil {
		return err
	}
	if pp, ok := l.in.Session.(platform.ProfilePreparer); ok && c.Status != store.StatusProfiled && l.skipProfile(c) == "" {
		// The input's profile follows its verification and the baselines:
		// the profiler's start-up can overlap them.
		pp.PrepareProfile()
	}
	for _, kind := range []platform.TargetKind{platform.TargetEager, platform.TargetCompile} {
		if err := l.baseline(ctx, kind, detail.Baselines); err != nil {
			return err
		}
	}
	// Before its verification: fingerprinting loads the kernel afresh.
	if err := l.fingerprintInput(ctx, c); err != nil {
		return err
	}
	for c.Status != store.StatusProfiled {
		switch c.Status {
		case store.StatusProposed:
			c, err = l.verify(ctx, c)
		case store.StatusVerified:
			c, err = l.timeCandidate(ctx, c, nil)
		case store.StatusTimed:
			c, err = l.profileCandidate(ctx, c, l.skipProfile(c))
		default:
			v := platform.Verdict{Failure: "failed", Reason: c.Error}
			if c.Verdict != nil {
				v = *c.Verdict
			}
			_ = l.st.FinishRound(context.WithoutCancel(ctx), l.runID, 0, nil)
			return &InputRejectedError{Verdict: v}
		}
		if err != nil {
			return err
		}
	}
	l.input = c
	if detail.BestID == "" {
		if err := l.st.SetBest(ctx, l.runID, store.InputID); err != nil {
			return err
		}
	}
	l.bestID = store.InputID
	l.state = search.State{BestID: store.InputID, Phase: search.PhaseSearch}
	if err := l.finishRound(ctx, 0); err != nil {
		return err
	}
	l.ev.emit(l.roundEvent(ctx, 0, 0))
	return nil
}

// A baseline timed with a coefficient of variation above baselineMaxCV is
// timed again, up to baselineRetakes more times.
const (
	baselineMaxCV   = 0.05
	baselineRetakes = 2
)

// baseline times PyTorch eager or torch.compile once per run.
func (l *loop) baseline(ctx context.Context, kind platform.TargetKind, have store.Baselines) error {
	cur := have.Eager
	if kind == platform.TargetCompile {
		cur = have.Compile
	}
	if cur != nil {
		l.setBaseline(kind, *cur)
		return nil
	}
	t, err := l.in.Session.Time(ctx, platform.Target{Kind: kind})
	if err != nil {
		return fmt.Errorf("time %s baseline: %w", kind, err)
	}
	// Every speedup of the run is against this one measurement: a noisy one
	// is taken again, and the steadiest is kept. (On the H200 the
	// torch.compile baselines of 0.07 ms problems ran at CV up to 24%, and
	// the retakes right after were as noisy: this helps against a passing
	// disturbance only; Timing.HostBound names a lasting one.)
	for i := 0; i < baselineRetakes && t.CV > baselineMaxCV; i++ {
		again, err := l.in.Session.Time(ctx, platform.Target{Kind: kind})
		if err != nil {
			return fmt.Errorf("time %s baseline: %w", kind, err)
		}
		l.log.Info("baseline timed again", "baseline", kind, "cv", t.CV, "median_ms", t.MedianMS,
			"again_cv", again.CV, "again_median_ms", again.MedianMS)
		if again.CV < t.CV {
			t = again
		}
	}
	if err := l.st.SetBaseline(ctx, l.runID, kind, t); err != nil {
		return err
	}
	l.setBaseline(kind, t)
	return l.art.writeJSON(filepath.Join(roundDir(0), string(kind)+".timing.json"), t)
}

func (l *loop) setBaseline(kind platform.TargetKind, t platform.Timing) {
	if kind == platform.TargetEager {
		l.eager = &t
	} else {
		l.compile = &t
	}
}

// finishRound stores the strategy state with the round.
func (l *loop) finishRound(ctx context.Context, r int) error {
	l.state.SearchStop = l.searchStop
	b, err := json.Marshal(l.state)
	if err != nil {
		return fmt.Errorf("finish round %d: %w", r, err)
	}
	return l.st.FinishRound(ctx, l.runID, r, b)
}

// stopReason applies the stop rules to the state after a round ("" to go
// on).
func (l *loop) stopReason() string {
	if s := l.prop.budgetStopped(); s != "" && l.state.Phase != search.PhasePolish {
		return s // the polish needs no LLM
	}
	if l.exhausted != "" {
		return l.exhausted
	}
	if s := l.rooflineStop(); s != "" {
		return s
	}
	maxNo := max(1, l.cfg.StrategyConfig.MaxNoImprovement)
	if l.state.Phase == search.PhasePolish {
		if l.state.PolishRounds >= l.cfg.StrategyConfig.PolishRounds {
			return fmt.Sprintf("polish_rounds: %d tune rounds", l.state.PolishRounds)
		}
		if l.state.NoImprovement >= maxNo {
			return fmt.Sprintf("plateau: %d tune rounds without a promotion", l.state.NoImprovement)
		}
		return ""
	}
	if l.state.Rounds >= l.cfg.MaxRounds {
		return fmt.Sprintf("max_rounds: %d rounds", l.state.Rounds)
	}
	if l.state.NoImprovement >= maxNo {
		return fmt.Sprintf("plateau: %d rounds without a promotion", l.state.NoImprovement)
	}
	return ""
}

// enterPolish switches to the tune polish when the search ended for a
// reason a polish can follow; it reports whether the run goes on.
func (l *loop) enterPolish(reason string) bool {
	if l.polish == nil || l.state.Phase == search.PhasePolish {
		return false
	}
	l.searchStop = reason
	l.state.Phase = search.PhasePolish
	l.state.NoImprovement = 0
	l.exhausted = ""
	return l.stopReason() == ""
}

// rooflineStop reports the best kernel at the roofline threshold.
func (l *loop) rooflineStop() string {
	if e := l.cfg.Roofline.EarlyStop; e != nil && !*e {
		return ""
	}
	best, err := l.st.Candidate(context.Background(), l.runID, l.bestID)
	if err != nil || best.Roofline == nil || best.Roofline.Class == roofline.ClassUnknown {
		return ""
	}
	r := best.Roofline
	if t := l.cfg.Roofline.ThresholdPct; t > 0 {
		if r.SOL >= t {
			return fmt.Sprintf("roofline: best %s at %.1f%% of the roofline (threshold %.0f%%)", best.ID, r.SOL, t)
		}
		return ""
	}
	if r.AtRoofline {
		return fmt.Sprintf("roofline: best %s at %.1f%% of the roofline", best.ID, r.SOL)
	}
	return ""
}
