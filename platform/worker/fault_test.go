package worker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// TestFaults: the worker's errors say whether they are the candidate's fault
// through platform.FaultOf; a problem that cannot be loaded never is, even
// when it wraps a worker's rejection.
func TestFaults(t *testing.T) {
	cases := []struct {
		err   error
		fault bool
		check string
	}{
		{nil, false, ""},
		{errors.New("protocol"), false, ""},
		{fmt.Errorf("time k: %w", &PhysicalLimitError{Err: errors.New("0.001 ms is below the floor")}), true, "physical_limit"},
		{&RecheckError{Reason: "outputs changed"}, true, "recheck"},
		{&RecheckError{Check: "unseen_inputs", Reason: "slower on new inputs"}, true, "unseen_inputs"},
		{fmt.Errorf("bench: %w", &TimeoutError{Op: "bench", After: time.Minute}), true, "timeout"},
		{&ExitError{Signal: "SIGKILL"}, true, "crash"},
		{&ReplyError{Kind: "timing_forged", Message: "claims"}, true, "timing_forged"},
		{fmt.Errorf("time: %w", &ProblemError{Err: &ReplyError{Kind: "oom", Message: "load"}}), false, ""},
		{&platform.Fault{Check: "x", Reason: "y"}, true, "x"},
	}
	for i, c := range cases {
		var pe *ProblemError
		if problem := errors.As(c.err, &pe); errors.Is(c.err, platform.ErrProblem) != problem {
			t.Errorf("case %d (%v): errors.Is(platform.ErrProblem) = %v, want %v", i, c.err, !problem, problem)
		}
		f, ok := platform.FaultOf(c.err)
		if ok != c.fault || (ok && (f.Check != c.check || f.Reason == "")) {
			t.Errorf("case %d (%v): FaultOf = %+v, %v; want fault %v with check %q", i, c.err, f, ok, c.fault, c.check)
		}
	}
}
