package agent

import (
	"errors"
	"fmt"

	"github.com/kagent-kernels/kagent/platform"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrInvalidInput: RunInput lacks something a run needs (a task, a
	// session, a store) or names an unknown strategy.
	ErrInvalidInput = errors.New("invalid run input")
	// ErrNoProposer: the strategy needs an LLM or a tuner and has neither.
	ErrNoProposer = errors.New("no proposer")
	// ErrNotResumable: the run cannot be resumed (it finished, or it was made
	// by another kernel dir).
	ErrNotResumable = errors.New("run cannot be resumed")
	// ErrNotExecuting: Run was given a platform that executes nothing; use
	// DryRun.
	ErrNotExecuting = errors.New("platform executes nothing")
)

// InputRejectedError: the input kernel failed verification (or its timing
// was rejected), so there is no baseline to improve on.
type InputRejectedError struct {
	Verdict platform.Verdict
}

func (e *InputRejectedError) Error() string {
	return fmt.Sprintf("input kernel failed verification: %s: %s (%s)", e.Verdict.Failure, e.Verdict.Reason, InputAdvice(e.Verdict.Failure))
}

// InputAdvice says what to do about an input kernel that failed as
// failure: out of memory, the kernel's own allocations or the problem's size
// with the checks' working memory may be the cause; otherwise the kernel.
func InputAdvice(failure string) string {
	if failure == "oom" {
		return "the kernel's own allocations, or the problem at this size with the checks' working memory, " +
			"need more device memory than is free: time a smaller --size, or free the device"
	}
	return "fix the input kernel; `kagent eval` shows every check"
}
