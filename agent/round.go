package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/search"
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
	if l.scr != nil {
		l.scr.round = r
	}
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
	l.prepareFinalProfile()

	v := view{round: r, h: h, bestID: l.state.BestID, eager: l.eager, compile: l.compile}
	diags, err := l.prop.diagnoseAll(ctx, v, slots, chains)
	if err != nil {
		return err
	}
	l.compileAhead(ctx, r, slots, chains, all)
	finals, err := l.runSlots(ctx, v, slots, chains, diags)
	if err != nil {
		return err
	}
	var retimed []string
	for _, s := range slots {
		if s.Retime != "" {
			retimed = append(retimed, s.Retime)
		}
	}
	promotions, err := l.promote(ctx, r, retimed)
	if err != nil {
		return err
	}
	if err := l.prop.reflectAll(ctx, v, slots, finals, diags); err != nil {
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
func (l *loop) runSlots(ctx context.Context, v view, slots []search.Slot, chains map[int][]store.Candidate,
	diags map[string][]prompts.Bottleneck) ([]*store.Candidate, error) {
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
			c, err := l.runSlot(rctx, v, s, chains[s.Index], diags)
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
func (l *loop) runSlot(ctx context.Context, v view, s search.Slot, chain []store.Candidate,
	diags map[string][]prompts.Bottleneck) (*store.Candidate, error) {
	if s.Retime != "" {
		c, ok := v.h.ByID[s.Retime]
		if !ok {
			return nil, &fatalError{fmt.Errorf("retime %s: not a candidate of an earlier round", s.Retime)}
		}
		c, err := l.retime(ctx, c, l.budget(s.Budget))
		if err != nil {
			return nil, err
		}
		return &c, nil
	}
	var cur store.Candidate
	if len(chain) == 0 {
		c, ok, err := l.prop.propose(ctx, v, s, diags)
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
			cur, err = l.verifyCut(ctx, cur, l.cutoff(v, s))
		case store.StatusVerified:
			cur, err = l.timeCandidate(ctx, cur, l.budget(s.Budget))
		case store.StatusTimed:
			cur, err = l.profileCandidate(ctx, cur, l.skipProfile(cur))
		case store.StatusRejected:
			next, ok, rerr := l.prop.refine(ctx, v.round, s, cur, failures)
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
