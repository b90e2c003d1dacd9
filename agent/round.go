package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kagent-dev/kagent/agent/llm"
	"github.com/kagent-dev/kagent/agent/store"
	"github.com/kagent-dev/kagent/prompts"
	"github.com/kagent-dev/kagent/search"
)

// fatalError marks an error that ends the run (a store or file write that
// failed), as opposed to an LLM call that failed, which only ends its slot.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// current is the strategy of the phase the run is in.
func (l *loop) current() search.Strategy {
	if l.state.Phase == search.PhasePolish && l.polish != nil {
		return l.polish
	}
	return l.strat
}

// runRound runs round r: select slots, diagnose each parent once, evaluate
// the slots in parallel (num_workers at a time), decide promotions, reflect,
// update the strategy and finish the round in the store. open is set when a
// resumed run continues a round the store has open.
func (l *loop) runRound(ctx context.Context, r int, open bool) error {
	all, err := l.st.Candidates(ctx, l.runID, store.CandidateFilter{})
	if err != nil {
		return err
	}
	h := search.NewHistory(all, r)
	strat := l.current()
	slots, err := strat.Slots(ctx, &l.state, h)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.log.Warn("strategy proposes nothing", "strategy", strat.Name(), "err", err)
		l.exhausted = fmt.Sprintf("%s: %s", strat.Name(), oneLine(err.Error()))
	} else if len(slots) == 0 {
		l.exhausted = fmt.Sprintf("%s: no untried variant of the best kernel", strat.Name())
	}
	if l.exhausted != "" && !open {
		return nil // nothing to propose: no round
	}
	if !open {
		if err := l.st.StartRound(ctx, l.runID, r); err != nil {
			return err
		}
	}
	chains := map[int][]store.Candidate{}
	for _, c := range all {
		if c.Round == r && c.Slot > 0 {
			chains[c.Slot] = append(chains[c.Slot], c)
		}
	}
	for _, ch := range chains {
		slices.SortFunc(ch, func(a, b store.Candidate) int { return a.RefineAttempt - b.RefineAttempt })
	}
	l.ev.emit(Event{Event: EventRoundStarted, Round: ptr(r), Slots: len(slots)})

	diags, err := l.diagnoseAll(ctx, r, slots, chains, h)
	if err != nil {
		return err
	}
	finals, err := l.runSlots(ctx, r, slots, chains, diags, h)
	if err != nil {
		return err
	}
	promotions, err := l.promote(ctx, r)
	if err != nil {
		return err
	}
	if err := l.reflectAll(ctx, r, slots, finals, diags, h); err != nil {
		return err
	}
	after, err := l.st.Candidates(ctx, l.runID, store.CandidateFilter{})
	if err != nil {
		return err
	}
	var measured []store.Candidate
	for _, c := range after {
		if c.Round == r && c.Status.Measured() {
			measured = append(measured, c)
		}
	}
	l.state.BestID = l.bestID
	strat.Update(&l.state, search.Outcome{Promoted: promotions > 0, Measured: measured}, search.NewHistory(after, r+1))
	if l.state.Phase == search.PhasePolish {
		l.state.PolishRounds++
	} else {
		l.state.Rounds++
	}
	if err := l.finishRound(ctx, r); err != nil {
		return err
	}
	l.ev.emit(l.roundEvent(ctx, r, promotions))
	return nil
}

// runSlots evaluates the slots in parallel, at most num_workers at once, and
// returns each slot's final candidate (nil when the slot produced none). The
// first fatal error cancels the others.
func (l *loop) runSlots(ctx context.Context, r int, slots []search.Slot, chains map[int][]store.Candidate,
	diags map[string][]prompts.Bottleneck, h search.History) ([]*store.Candidate, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(1, l.cfg.NumWorkers))
	finals := make([]*store.Candidate, len(slots))
	var wg sync.WaitGroup
	var once sync.Once
	var fatal error
	for i, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-rctx.Done():
				return
			}
			defer func() { <-sem }()
			c, err := l.runSlot(rctx, r, s, chains[s.Index], diags, h)
			if err != nil {
				once.Do(func() { fatal = err; cancel(err) })
				return
			}
			finals[i] = c
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fatal != nil {
		return nil, fatal
	}
	return finals, nil
}

// runSlot takes one slot from where the store has it to its end: propose
// (unless a candidate is recorded), verify, time, profile, and on a
// rejection refine up to refine_attempts times. It returns the slot's last
// candidate (nil: none was proposed) or a fatal error.
func (l *loop) runSlot(ctx context.Context, r int, s search.Slot, chain []store.Candidate,
	diags map[string][]prompts.Bottleneck, h search.History) (*store.Candidate, error) {
	var cur store.Candidate
	if len(chain) == 0 {
		c, ok, err := l.propose(ctx, r, s, diags, h)
		if err != nil || !ok {
			return nil, err
		}
		cur = c
	} else {
		cur = chain[len(chain)-1]
	}
	var failures []string
	for _, c := range chain {
		if c.Verdict != nil && !c.Verdict.Passed && c.ID != cur.ID {
			failures = append(failures, c.Verdict.Failure+": "+c.Verdict.Reason)
		}
	}
	for {
		var err error
		switch cur.Status {
		case store.StatusProposed:
			cur, err = l.verify(ctx, cur)
		case store.StatusVerified:
			cur, err = l.timeCandidate(ctx, cur)
		case store.StatusTimed:
			cur, err = l.profileCandidate(ctx, cur, l.skipProfile(cur))
		case store.StatusRejected:
			next, ok, rerr := l.refine(ctx, r, s, cur, failures)
			if rerr != nil {
				return nil, rerr
			}
			if !ok {
				return &cur, nil
			}
			failures = append(failures, cur.Verdict.Failure+": "+cur.Verdict.Reason)
			cur = next
		default: // profiled or failed: the slot is settled
			return &cur, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// propose makes a slot's first candidate: a knob variant, or a rewrite by
// the LLM along the slot's bottleneck direction. ok is false when the slot
// yields nothing this round (no such direction, an LLM failure, the budget).
func (l *loop) propose(ctx context.Context, r int, s search.Slot, diags map[string][]prompts.Bottleneck, h search.History) (store.Candidate, bool, error) {
	id := store.CandidateID(r, s.Index, 0)
	c := store.Candidate{RunID: l.runID, ID: id, Round: r, Slot: s.Index, ParentID: s.Parent(), Bottleneck: s.Rank}
	if len(s.Parents) > 1 {
		c.Inspirations = s.Parents[1:]
	}
	if s.Variant != nil {
		c.Direction = "tune: " + s.Variant.Label
		c, err := l.add(ctx, c, s.Variant.Source, nil)
		return c, err == nil, err
	}
	bs := diags[s.Parent()]
	if s.Rank > len(bs) {
		l.log.Info("no diagnosed direction for slot", "candidate", id, "parent", s.Parent(), "rank", s.Rank, "directions", len(bs))
		return c, false, nil
	}
	b := bs[s.Rank-1]
	c.Direction = b.Direction()
	parent := h.ByID[s.Parent()]
	if err := l.art.writeJSON(candidateFile(id, "direction.json"), b); err != nil {
		return c, false, &fatalError{err}
	}
	p, err := l.in.Prompts.Optimize(prompts.OptimizeData{
		Target: l.target, Problem: l.in.Task.ProblemSource, Kernel: parent.Source,
		Times: l.times(parent, h), Roofline: rooflineOf(parent), Bottleneck: b,
		Attempts: attemptsOn(parent.ID, h), Reflections: l.reflections(ctx),
	})
	if err != nil {
		return c, false, &fatalError{err}
	}
	reply, err := l.ask(ctx, r, id, llm.PurposeOptimize, p, candidateFile(id, "optimize"))
	if err != nil {
		return c, false, l.slotError(ctx, id, err)
	}
	src, xerr := llm.ExtractPython(reply)
	if xerr != nil {
		src = reply
	}
	c, err = l.add(ctx, c, src, xerr)
	return c, err == nil, err
}

// refine asks the LLM to repair a rejected candidate, with the named
// failure, its reason and the earlier failures of the slot. ok is false when
// the slot stops here (no attempts left, not repairable, no LLM, budget).
func (l *loop) refine(ctx context.Context, r int, s search.Slot, cur store.Candidate, failures []string) (store.Candidate, bool, error) {
	if l.in.LLM == nil || s.Variant != nil || cur.Verdict == nil || cur.Verdict.Failure == failDup ||
		cur.RefineAttempt >= l.cfg.RefineAttempts || l.budgetStopped() != "" {
		return cur, false, nil
	}
	n := cur.RefineAttempt + 1
	id := store.CandidateID(r, s.Index, n)
	p, err := l.in.Prompts.Refine(prompts.RefineData{
		Target: l.target, Problem: l.in.Task.ProblemSource, Kernel: cur.Source,
		Failure: cur.Verdict.Failure, Reason: cur.Verdict.Reason, Attempt: n, MaxAttempts: l.cfg.RefineAttempts,
		Previous: failures, Direction: cur.Direction,
	})
	if err != nil {
		return cur, false, &fatalError{err}
	}
	reply, err := l.ask(ctx, r, id, llm.PurposeRefine, p, candidateFile(id, "refine"))
	if err != nil {
		return cur, false, l.slotError(ctx, id, err)
	}
	src, xerr := llm.ExtractPython(reply)
	if xerr != nil {
		src = reply
	}
	next := store.Candidate{RunID: l.runID, ID: id, Round: r, Slot: cur.Slot, ParentID: cur.ParentID,
		Inspirations: cur.Inspirations, Bottleneck: cur.Bottleneck, Direction: cur.Direction, RefineOf: cur.ID,
		RefineAttempt: n}
	next, err = l.add(ctx, next, src, xerr)
	return next, err == nil, err
}

// slotError sorts an error of an LLM step: fatal ones (the context, the
// store, files) end the run; an LLM failure or the budget ends the slot.
func (l *loop) slotError(ctx context.Context, id string, err error) error {
	var fe *fatalError
	switch {
	case errors.As(err, &fe):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, llm.ErrBudgetExceeded):
		l.log.Info("llm budget reached", "candidate", id, "err", err)
		return nil
	case errors.Is(err, llm.ErrUnreachable):
		// Every further call would fail the same way: the run stops on the
		// first call that gave up, instead of finishing rounds that asked
		// nothing.
		return &fatalError{err: err}
	}
	l.log.Warn("llm step failed; the slot yields nothing this round", "candidate", id, "err", err)
	return nil
}
