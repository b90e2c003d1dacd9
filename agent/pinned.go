package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/kerneldir"
)

// storeEventProblem records the SHA-256 of the problem (and test.py) a run
// judges against; data: problemPin.
const storeEventProblem = store.EventProblem

type problemPin = store.ProblemPin

func pinOf(t *kerneldir.Task) problemPin {
	return problemPin{Problem: t.ProblemSHA256, Test: t.TestSHA256}
}

// recordProblem stores the run's problem hashes.
func (l *loop) recordProblem(ctx context.Context) error {
	p := pinOf(l.in.Task)
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = l.st.AddEvent(ctx, store.Event{RunID: l.runID, Round: store.NoRound, Kind: storeEventProblem, Message: "problem.py sha256 " + p.Problem, Data: data})
	return err
}

// checkProblem refuses to resume a run whose problem.py or test.py is not
// what it started with: its recorded verdicts and timings were judged
// against the old one. Runs recorded before hashes were kept pass.
func (l *loop) checkProblem(ctx context.Context) error {
	evs, err := l.st.Events(ctx, l.runID, 0, 0)
	if err != nil {
		return fmt.Errorf("resume run %s: %w", l.runID, err)
	}
	now := pinOf(l.in.Task)
	for _, e := range evs {
		if e.Kind != storeEventProblem {
			continue
		}
		var was problemPin
		if err := json.Unmarshal(e.Data, &was); err != nil {
			return fmt.Errorf("resume run %s: unreadable problem record: %w", l.runID, err)
		}
		for _, f := range []struct{ name, was, now string }{
			{kerneldir.ProblemFile, was.Problem, now.Problem}, {kerneldir.TestFile, was.Test, now.Test},
		} {
			if f.was != f.now {
				return fmt.Errorf("resume run %s: %w: %s changed since the run started (sha256 %s, now %s); put the original back or start a new run",
					l.runID, ErrNotResumable, f.name, short(f.was), short(f.now))
			}
		}
	}
	return nil
}

func short(sum string) string {
	switch {
	case sum == "":
		return "none"
	case len(sum) > 12:
		return sum[:12]
	}
	return sum
}
