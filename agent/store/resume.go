package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kagent-kernels/kagent/platform"
)

// ResumeState is what a loop needs to continue a run that stopped early
// (killed, interrupted, failed). The package documentation states the rules
// it follows.
type ResumeState struct {
	Run    Run
	Rounds []Round
	// LastFinished is the index of the last finished round (-1: none).
	LastFinished int
	// Open is the round that was started and not finished, if any: the loop
	// continues it without calling StartRound, then finishes it.
	Open *Round
	// NextRound is the index the next StartRound takes (once Open, if any, is
	// finished).
	NextRound int
	// OpenCandidates are the candidates of the open round: the (parent,
	// direction) slots that need no new proposal.
	OpenCandidates []Candidate
	// Verify lists proposed candidates: verify each again from its stored
	// source (no LLM call is repeated).
	Verify []Candidate
	// Time lists verified candidates that have no timing yet: time them.
	Time []Candidate
	// Profile lists timed candidates of the open round: profile them. Their
	// timing stands; they are never timed again.
	Profile []Candidate
	// Unrefined lists rejected candidates of the open round that no
	// candidate refines yet: the loop may ask for a refinement if
	// RefineAttempt is below its limit.
	Unrefined []Candidate
	// Counts is how many candidates the run holds in each status.
	Counts map[Status]int
	// MissingBaselines are the PyTorch baselines not timed yet.
	MissingBaselines []platform.TargetKind
	// Best is BestCandidate's answer (nil: nothing measured yet).
	Best *Candidate
	// Usage is the run's LLM spend so far, for its budget.
	Usage Usage
}

// ResumeState reads, from one snapshot, what is left to do in a run. It
// changes nothing: call ReopenRun before writing to a run that is not
// running.
func (s *Store) ResumeState(ctx context.Context, runID string) (*ResumeState, error) {
	st := &ResumeState{LastFinished: -1, Counts: map[Status]int{}}
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		if st.Run, err = getRun(ctx, tx, runID); err != nil {
			return err
		}
		if st.Rounds, err = listRounds(ctx, tx, runID); err != nil {
			return err
		}
		for i := range st.Rounds {
			if st.Rounds[i].Finished() {
				st.LastFinished = st.Rounds[i].Index
			} else {
				st.Open = &st.Rounds[i]
			}
		}
		st.NextRound = len(st.Rounds)
		all, err := listCandidates(ctx, tx, runID, CandidateFilter{})
		if err != nil {
			return err
		}
		refined := map[string]bool{}
		for _, c := range all {
			if c.RefineOf != "" {
				refined[c.RefineOf] = true
			}
		}
		for _, c := range all {
			st.Counts[c.Status]++
			open := st.Open != nil && c.Round == st.Open.Index
			if open {
				st.OpenCandidates = append(st.OpenCandidates, c)
			}
			switch {
			case c.Status == StatusProposed:
				st.Verify = append(st.Verify, c)
			case c.Status == StatusVerified:
				st.Time = append(st.Time, c)
			case c.Status == StatusTimed && open:
				st.Profile = append(st.Profile, c)
			case c.Status == StatusRejected && open && !refined[c.ID]:
				st.Unrefined = append(st.Unrefined, c)
			}
		}
		if st.Run.Baselines.Eager == nil {
			st.MissingBaselines = append(st.MissingBaselines, platform.TargetEager)
		}
		if st.Run.Baselines.Compile == nil {
			st.MissingBaselines = append(st.MissingBaselines, platform.TargetCompile)
		}
		best, err := bestCandidate(ctx, tx, runID)
		switch {
		case err == nil:
			st.Best = &best
		case !errors.Is(err, ErrNotFound):
			return err
		}
		st.Usage, err = llmUsage(ctx, tx, runID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resume state of run %s: %w", runID, err)
	}
	return st, nil
}
