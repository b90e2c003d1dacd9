package agent

import (
	"context"

	"github.com/kagent-kernels/kagent/agent/store"
)

// step is one result of a candidate's pipeline (a verdict, a timing, a
// profile): what the store records, the artifact that shows it and the
// event that announces it.
type step struct {
	// update is the store's new status and result.
	update store.Update
	// file names the artifact under the candidate's dir ("" for none) and
	// body is its JSON.
	file string
	body any
	// event builds the event from the candidate as stored (nil for none).
	event func(store.Candidate) Event
}

// record writes one step of candidate c everywhere it goes, in one order:
// the artifact first (a file without its store row is harmless to a resumed
// run; a row without its file is not), then the store, then the event.
func (p *pipeline) record(ctx context.Context, c store.Candidate, s step) (store.Candidate, error) {
	if s.file != "" {
		if err := p.art.writeJSON(candidateFile(c.ID, s.file), s.body); err != nil {
			return c, err
		}
	}
	c, err := p.st.UpdateCandidate(ctx, p.runID, c.ID, s.update)
	if err != nil {
		return c, err
	}
	if s.event != nil {
		p.ev.emit(s.event(c))
	}
	return c, nil
}

// verifiedEvent announces a verdict (passed or rejected) of a candidate.
func verifiedEvent(c store.Candidate) Event {
	ev := Event{Event: EventCandidateVerified, Round: ptr(c.Round), Candidate: c.ID, Parent: c.ParentID,
		Direction: c.Direction, Attempt: c.RefineAttempt, Passed: ptr(c.Verdict != nil && c.Verdict.Passed)}
	if c.Verdict != nil && !c.Verdict.Passed {
		ev.Failure, ev.Reason = c.Verdict.Failure, c.Verdict.Reason
	}
	return ev
}

// timedEvent announces a candidate's timing: its median and CV, or the
// check its timing failed.
func timedEvent(c store.Candidate) Event {
	ev := Event{Event: EventCandidateTimed, Round: ptr(c.Round), Candidate: c.ID, Parent: c.ParentID, Attempt: c.RefineAttempt}
	if c.Timing != nil {
		ev.MedianMS, ev.CV, ev.Budget = c.Timing.MedianMS, c.Timing.CV, c.Timing.Budget
	}
	if c.Status == store.StatusRejected && c.Verdict != nil {
		ev.Passed, ev.Failure, ev.Reason, ev.CV = ptr(false), c.Verdict.Failure, c.Verdict.Reason, 0
	}
	return ev
}
