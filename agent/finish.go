package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/platform"
)

// finish ends a run whose search stopped: the acceptance gate on the best,
// best_kernel.py, optimized_kernel_<strategy>.py, the report, and the run
// recorded as finished.
func (l *loop) finish(ctx context.Context, reason string) (Result, error) {
	l.prepareFinalProfile()
	gate, err := l.acceptanceGate(ctx)
	if err != nil {
		return l.fail(ctx, err)
	}
	if l.scr != nil {
		if err := l.scr.heldOut(ctx); err != nil {
			if ctx.Err() != nil {
				return l.fail(ctx, ctx.Err())
			}
			l.log.Warn("held-out screen", "err", err) // the report's Pareto set goes without
		}
	}
	best, err := l.st.Candidate(ctx, l.runID, l.bestID)
	if err != nil {
		return l.fail(ctx, err)
	}
	if l.cfg.ProfileCandidates == configs.ProfileFinal {
		// Profiled once, now that it is final, not at each promotion; the
		// run's last profile, so nothing is started ahead after it.
		if pe, ok := l.in.Session.(platform.ProfileEnder); ok {
			pe.LastProfile()
		}
		start, before := time.Now(), best.Metrics
		if best, err = l.profileSkipped(ctx, best); err != nil {
			return l.fail(ctx, err)
		}
		if best.Metrics != before { // profiled now, not before
			l.log.Info("final profile", "candidate", best.ID, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	bestPath := l.art.path("best_kernel.py")
	if err := l.art.write("best_kernel.py", []byte(best.Source)); err != nil {
		return l.fail(ctx, err)
	}
	var optimized string
	if l.in.WriteOptimized && best.ID != store.InputID {
		optimized = filepath.Join(l.in.Task.Dir, "optimized_kernel_"+l.cfg.Strategy+".py")
		if err := os.WriteFile(optimized, []byte(best.Source), 0o644); err != nil {
			return l.fail(ctx, fmt.Errorf("write %s: %w", optimized, err))
		}
	}
	if err := l.st.FinishRun(context.WithoutCancel(ctx), l.runID, store.RunFinished, reason); err != nil {
		return l.fail(ctx, err)
	}
	res := l.result(context.WithoutCancel(ctx), store.RunFinished, reason)
	res.Acceptance, res.BestPath, res.OptimizedPath = gate, bestPath, optimized
	if err := l.writeReport(ctx, res); err != nil {
		l.log.Warn("write report", "err", err)
	}
	l.ev.emit(l.finishedEvent(res))
	return res, nil
}

// prepareFinalProfile starts the profiler's process ahead under
// profile_candidates final, where the best is profiled when the run ends: its
// start-up (the profiler's, torch's and Triton's imports) then overlaps the
// rounds and the acceptance gate instead of following them. A process
// already waiting is kept; one that waits past the profiler's idle limit
// ends and the profile starts its own.
func (l *loop) prepareFinalProfile() {
	if l.cfg.ProfileCandidates != configs.ProfileFinal {
		return
	}
	if pp, ok := l.in.Session.(platform.ProfilePreparer); ok {
		pp.PrepareProfile()
	}
}

// stageFinalProfile stages c's final profile (platform.ProfileStager) before
// c's acceptance gate, which times nothing: the profiled process loads the
// problem and warms c up while the gate verifies it. Only where c would be
// profiled right after the gate: under profile_candidates final, c not
// profiled yet, and no held-out screen (which times) due between the two.
// Otherwise whatever was staged before (for a candidate that failed its
// gate) is ended, so that it does not run beside c's gate.
func (l *loop) stageFinalProfile(ctx context.Context, c *store.Candidate) {
	st, ok := l.in.Session.(platform.ProfileStager)
	if !ok {
		return
	}
	if c == nil || l.cfg.ProfileCandidates != configs.ProfileFinal || !l.profilePending(*c) || l.scr != nil && l.scr.heldOutDue() {
		st.UnstageProfile()
		return
	}
	if st.StageProfile(ctx, l.platformCandidate(*c)) {
		l.log.Debug("final profile staged beside the acceptance gate", "candidate", c.ID)
	}
}

// acceptanceGate re-verifies the best kernel in a fresh process with new
// seeds. A best that fails is rejected with the gate's verdict and the one
// promoted before it is tried, down to the input kernel.
func (l *loop) acceptanceGate(ctx context.Context) (*platform.Verdict, error) {
	acc, ok := l.in.Session.(platform.Accepter)
	if !ok || l.bestID == store.InputID {
		return nil, nil
	}
	chain, err := l.promotionChain(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c, err := l.st.Candidate(ctx, l.runID, chain[i])
		if err != nil {
			return nil, err
		}
		if !c.Status.Measured() {
			continue // rejected by an earlier gate (a resumed finish)
		}
		if _, err := l.materialize(c); err != nil {
			return nil, err
		}
		l.stageFinalProfile(ctx, &c)
		start := time.Now()
		v, err := acc.Accept(ctx, l.platformCandidate(c))
		if err != nil {
			return nil, fmt.Errorf("acceptance gate on %s: %w", c.ID, err)
		}
		l.log.Info("acceptance gate", "candidate", c.ID, "passed", v.Passed, "took", time.Since(start).Round(time.Millisecond))
		_ = l.art.writeJSON(candidateFile(c.ID, "acceptance.json"), v)
		data, _ := json.Marshal(v)
		msg := "passed"
		if !v.Passed {
			msg = v.Failure + ": " + v.Reason
		}
		if _, err := l.st.AddEvent(ctx, store.Event{RunID: l.runID, Round: store.NoRound, CandidateID: c.ID, Kind: storeEventGate, Message: msg, Data: data}); err != nil {
			return nil, err
		}
		if v.Passed {
			if c.ID != l.bestID {
				if err := l.st.SetBest(ctx, l.runID, c.ID); err != nil {
					return nil, err
				}
				l.bestID = c.ID
			}
			return &v, nil
		}
		l.log.Warn("the best kernel failed the acceptance gate", "candidate", c.ID, "failure", v.Failure, "reason", v.Reason)
		v.Reason = "acceptance gate (fresh process, new seeds): " + v.Reason
		if _, err := l.st.UpdateCandidate(ctx, l.runID, c.ID, store.Update{Status: store.StatusRejected, Verdict: &v}); err != nil {
			return nil, err
		}
	}
	l.stageFinalProfile(ctx, nil) // every gate failed: what was staged is not the best's
	if err := l.st.SetBest(ctx, l.runID, store.InputID); err != nil {
		return nil, err
	}
	l.bestID = store.InputID
	return nil, nil
}

// promotionChain lists the promoted candidates in promotion order, the
// current best last.
func (l *loop) promotionChain(ctx context.Context) ([]string, error) {
	ds, err := l.st.Events(ctx, l.runID, 0, 0)
	if err != nil {
		return nil, err
	}
	var chain []string
	for _, e := range ds {
		if e.Kind != storeEventPromotion {
			continue
		}
		var d Decision
		if json.Unmarshal(e.Data, &d) == nil && d.Promoted && !slices.Contains(chain, d.Candidate) {
			chain = append(chain, d.Candidate)
		}
	}
	if len(chain) == 0 || chain[len(chain)-1] != l.bestID {
		chain = append(chain, l.bestID)
	}
	return chain, nil
}

// result reads the run's outcome from the store.
func (l *loop) result(ctx context.Context, status store.RunStatus, reason string) Result {
	res := Result{RunID: l.runID, Status: status, StopReason: reason, Eager: l.eager, Compile: l.compile,
		Counts: map[store.Status]int{}, Rounds: l.state.Rounds + l.state.PolishRounds}
	if l.art != nil {
		res.RunDir = l.art.dir
	}
	res.Usage = l.prop.usage(ctx)
	if ms, err := l.in.Session.Floor(ctx); err == nil {
		res.FloorMS = ms
	} else if ctx.Err() == nil && status == store.RunFinished {
		// (A failed run's error says why; the floor's would repeat it.)
		l.log.Warn("roofline floor unavailable", "err", err)
	}
	cs, err := l.st.Candidates(ctx, l.runID, store.CandidateFilter{})
	if err != nil {
		return res
	}
	for _, c := range cs {
		res.Counts[c.Status]++
		switch DuplicateBy(c.Verdict) {
		case "source":
			res.Duplicates.BySource++
		case "code":
			res.Duplicates.ByCode++
		}
	}
	if in, err := l.st.Candidate(ctx, l.runID, store.InputID); err == nil {
		res.Input = l.kernelOf(in)
	}
	if l.bestID == "" {
		return res
	}
	best, err := l.st.Candidate(ctx, l.runID, l.bestID)
	if err != nil {
		return res
	}
	res.Best = l.kernelOf(best)
	res.Improved = best.ID != store.InputID && best.Status.Measured()
	res.Representative = best.Timing != nil && best.Timing.Representative
	b := best.MedianMS()
	if b > 0 {
		res.SpeedupVsInput = ratio.Of(res.Input.Timing.MedianMS, b)
		if l.eager != nil && l.eager.Unavailable == "" {
			res.SpeedupVsEager = ratio.Of(l.eager.MedianMS, b)
		}
		if l.compile != nil && l.compile.Unavailable == "" {
			res.SpeedupVsCompile = ratio.Of(l.compile.MedianMS, b)
		}
		if res.FloorMS > 0 {
			res.FloorFraction = ratio.Of(res.FloorMS, b)
		}
	}
	return res
}

func (l *loop) kernelOf(c store.Candidate) Kernel {
	k := Kernel{ID: c.ID, Round: c.Round, Source: c.Source, Roofline: c.Roofline}
	if l.art != nil {
		k.Path = l.art.kernelPath(c.ID)
	}
	if c.Timing != nil {
		k.Timing = *c.Timing
	}
	return k
}

// speedupEvent fills an event's best fields from kernel c.
func (l *loop) speedupEvent(ev Event, c store.Candidate) Event {
	ev.BestID, ev.BestMS = c.ID, c.MedianMS()
	if ev.BestMS > 0 {
		ev.SpeedupVsInput = ratio.Of(l.input.MedianMS(), ev.BestMS)
		if l.eager != nil && l.eager.Unavailable == "" {
			ev.SpeedupVsEager = ratio.Of(l.eager.MedianMS, ev.BestMS)
		}
		if l.compile != nil && l.compile.Unavailable == "" {
			ev.SpeedupVsCompile = ratio.Of(l.compile.MedianMS, ev.BestMS)
		}
	}
	return ev
}

// roundEvent is round_finished: the best after round r and the spend.
func (l *loop) roundEvent(ctx context.Context, r, promotions int) Event {
	ev := Event{Event: EventRoundFinished, Round: ptr(r), Promotions: promotions}
	if best, err := l.st.Candidate(ctx, l.runID, l.bestID); err == nil {
		ev = l.speedupEvent(ev, best)
	}
	return l.withSpend(ev)
}

func (l *loop) withSpend(ev Event) Event {
	var s llm.Stats
	if r, ok := l.in.LLM.(llm.StatsReporter); ok && l.in.LLM != nil {
		s = r.Stats()
	}
	ev.LLMCalls = s.Calls + l.prop.prior.Calls
	ev.LLMTokens = s.Tokens() + l.prop.prior.PromptTokens + l.prop.prior.CompletionTokens
	ev.LLMEstimatedCalls = s.EstimatedCalls + l.prop.prior.EstimatedCalls
	ev.LLMCostUSD = s.CostUSD + l.prop.prior.CostUSD
	return ev
}

// finishedEvent is run_finished.
func (l *loop) finishedEvent(res Result) Event {
	ev := Event{Event: EventRunFinished, Status: string(res.Status), StopReason: res.StopReason, Improved: ptr(res.Improved),
		BestID: res.Best.ID, BestMS: res.Best.Timing.MedianMS, SpeedupVsInput: res.SpeedupVsInput,
		SpeedupVsEager: res.SpeedupVsEager, SpeedupVsCompile: res.SpeedupVsCompile}
	ev.LLMCalls, ev.LLMTokens, ev.LLMCostUSD = res.Usage.Calls, res.Usage.PromptTokens+res.Usage.CompletionTokens, res.Usage.CostUSD
	ev.LLMEstimatedCalls = res.Usage.EstimatedCalls
	return ev
}

// isBudgetStop reports whether a stop reason is the LLM budget.
func isBudgetStop(reason string) bool {
	return len(reason) >= 7 && reason[:7] == "budget:"
}
