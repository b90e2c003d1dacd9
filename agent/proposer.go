package agent

import (
	"context"
	"errors"
	"sync"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/search"
)

// proposer makes the candidates of a round's slots and their repairs: a
// knob variant as it is, or, through the LLM, a diagnosis of each parent, a
// rewrite along one of the diagnosed directions, refinements of a rejected
// candidate and a reflection on each outcome. It keeps the run's LLM budget.
// What it gets goes through the pipeline (recorded, written, checked for
// duplicates), and what it knows of the run is the view of the round it is
// given; the loop (the driver) decides which slots it works on and when.
type proposer struct {
	*pipeline
	target prompts.Target
	// resumed: replies already in the run dir are reused instead of asked again.
	resumed bool
	// prior is the LLM spend recorded before a resume.
	prior store.Usage

	mu         sync.Mutex
	budgetStop string
}

// view is what the proposer sees of the run in one round.
type view struct {
	round int
	// h holds the run's candidates of earlier rounds.
	h search.History
	// bestID is the best kernel at the start of the round.
	bestID string
	// eager and compile are the baselines (nil until timed).
	eager, compile *platform.Timing
}

// times are the measurements a prompt about kernel k shows.
func (v view) times(k store.Candidate) prompts.Timings {
	t := prompts.Timings{KernelMS: k.MedianMS()}
	if b, ok := v.h.ByID[v.bestID]; ok {
		t.BestMS = b.MedianMS()
	}
	if v.eager != nil && v.eager.Unavailable == "" {
		t.EagerMS = v.eager.MedianMS
	}
	if v.compile != nil && v.compile.Unavailable == "" {
		t.CompileMS = v.compile.MedianMS
	}
	return t
}

// propose makes a slot's first candidate: a knob variant, or a rewrite by
// the LLM along the slot's bottleneck direction. ok is false when the slot
// yields nothing this round (no such direction, an LLM failure, the budget).
func (pr *proposer) propose(ctx context.Context, v view, s search.Slot, diags map[string][]prompts.Bottleneck) (store.Candidate, bool, error) {
	id := store.CandidateID(v.round, s.Index, 0)
	c := store.Candidate{RunID: pr.runID, ID: id, Round: v.round, Slot: s.Index, ParentID: s.Parent(), Bottleneck: s.Rank}
	if len(s.Parents) > 1 {
		c.Inspirations = s.Parents[1:]
	}
	if s.Variant != nil {
		c.Direction = "tune: " + s.Variant.Label
		c, err := pr.addVariant(ctx, c, s.Variant.Source)
		return c, err == nil, err
	}
	bs := diags[s.Parent()]
	if s.Rank > len(bs) {
		pr.log.Info("no diagnosed direction for slot", "candidate", id, "parent", s.Parent(), "rank", s.Rank, "directions", len(bs))
		return c, false, nil
	}
	b := bs[s.Rank-1]
	c.Direction = b.Direction()
	parent := v.h.ByID[s.Parent()]
	if err := pr.art.writeJSON(candidateFile(id, "direction.json"), b); err != nil {
		return c, false, &fatalError{err}
	}
	p, err := pr.in.Prompts.Optimize(prompts.OptimizeData{
		Target: pr.target, Problem: pr.in.Task.ProblemSource, Kernel: parent.Source,
		Times: v.times(parent), Roofline: rooflineOf(parent), Bottleneck: b,
		Attempts: attemptsOn(parent.ID, v.h), Reflections: pr.reflections(ctx),
		Inspirations: inspirationsOf(s.Parents[1:], v.h),
	})
	if err != nil {
		return c, false, &fatalError{err}
	}
	reply, err := pr.ask(ctx, v.round, id, llm.PurposeOptimize, p, candidateFile(id, "optimize"))
	if err != nil {
		return c, false, pr.slotError(ctx, id, err)
	}
	src, xerr := llm.ExtractPython(reply)
	if xerr != nil {
		src = reply
	}
	c, err = pr.add(ctx, c, src, xerr)
	return c, err == nil, err
}

// refine asks the LLM to repair a rejected candidate, with the named
// failure, its reason and the earlier failures of the slot. ok is false when
// the slot stops here (no attempts left, not repairable, no LLM, budget).
func (pr *proposer) refine(ctx context.Context, r int, s search.Slot, cur store.Candidate, failures []string) (store.Candidate, bool, error) {
	if pr.in.LLM == nil || s.Variant != nil || cur.Verdict == nil || cur.Verdict.Failure == failDup ||
		cur.RefineAttempt >= pr.cfg.RefineAttempts || pr.budgetStopped() != "" {
		return cur, false, nil
	}
	n := cur.RefineAttempt + 1
	id := store.CandidateID(r, s.Index, n)
	p, err := pr.in.Prompts.Refine(prompts.RefineData{
		Target: pr.target, Problem: pr.in.Task.ProblemSource, Kernel: cur.Source,
		Failure: cur.Verdict.Failure, Reason: cur.Verdict.Reason, Attempt: n, MaxAttempts: pr.cfg.RefineAttempts,
		Previous: failures, Direction: cur.Direction,
	})
	if err != nil {
		return cur, false, &fatalError{err}
	}
	reply, err := pr.ask(ctx, r, id, llm.PurposeRefine, p, candidateFile(id, "refine"))
	if err != nil {
		return cur, false, pr.slotError(ctx, id, err)
	}
	src, xerr := llm.ExtractPython(reply)
	if xerr != nil {
		src = reply
	}
	next := store.Candidate{RunID: pr.runID, ID: id, Round: r, Slot: cur.Slot, ParentID: cur.ParentID,
		Inspirations: cur.Inspirations, Bottleneck: cur.Bottleneck, Direction: cur.Direction, RefineOf: cur.ID,
		RefineAttempt: n}
	next, err = pr.add(ctx, next, src, xerr)
	return next, err == nil, err
}

// slotError sorts an error of an LLM step: fatal ones (the context, the
// store, files) end the run; an LLM failure or the budget ends the slot.
func (pr *proposer) slotError(ctx context.Context, id string, err error) error {
	var fe *fatalError
	switch {
	case errors.As(err, &fe):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, llm.ErrBudgetExceeded):
		pr.log.Info("llm budget reached", "candidate", id, "err", err)
		return nil
	case errors.Is(err, llm.ErrUnreachable):
		// Every further call would fail the same way: the run stops on the
		// first call that gave up, instead of finishing rounds that asked
		// nothing.
		return &fatalError{err: err}
	}
	pr.log.Warn("llm step failed; the slot yields nothing this round", "candidate", id, "err", err)
	return nil
}
