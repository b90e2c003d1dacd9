package sweep

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrSelection: a problem selection (--problems) or shard (--shard) does
	// not parse.
	ErrSelection = errors.New("bad selection")
	// ErrNoProblems: no problem file matches the selection.
	ErrNoProblems = errors.New("no problems")
	// ErrMismatch: a sweep dir, results file or shard file belongs to another
	// sweep (another level, selection or strategy).
	ErrMismatch = errors.New("another sweep")
	// ErrNoResults: a sweep dir holds no results file to merge or show.
	ErrNoResults = errors.New("no sweep results")
	// ErrFormat: a sweep file is not in a format this kagent reads.
	ErrFormat = errors.New("unreadable sweep file")
)

// ProblemError is a problem that ended on an error that was not its
// kernel's fault (a worker that would not start, a full disk): it is
// recorded with status error and run again by the next sweep.
type ProblemError struct {
	Problem string // "19_ReLU"
	Err     error
}

func (e *ProblemError) Error() string { return fmt.Sprintf("problem %s: %v", e.Problem, e.Err) }
func (e *ProblemError) Unwrap() error { return e.Err }
