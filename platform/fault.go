package platform

import "errors"

// Fault is an error that is the candidate's doing (a physically impossible
// time, outputs that changed while timed, a hang, a crash, a failed check):
// the candidate is rejected with Check and Reason, and the run goes on.
// Errors that carry no Fault end the run.
type Fault struct {
	Check  string
	Reason string
}

func (f *Fault) Error() string { return f.Check + ": " + f.Reason }

// Kinder is a backend error that names its kind, as a worker's error reply
// does (platform/worker/PROTOCOL.md: "startup" for a worker that could not
// start, "oom" for device memory, ...), with its message.
type Kinder interface {
	ErrorKind() (kind, message string)
}

// KindOf is the kind and message of the first Kinder in err's chain.
func KindOf(err error) (kind, message string, ok bool) {
	var k Kinder
	if errors.As(err, &k) {
		kind, message = k.ErrorKind()
		return kind, message, true
	}
	return "", "", false
}

// Faulter is an error that can say whether it is a candidate's fault. A
// backend's errors implement it; the first Faulter in an error's chain
// decides (so an error that wraps a candidate's fault can say it is not one,
// as a worker's failure to load the problem does).
type Faulter interface {
	Fault() (*Fault, bool)
}

// FaultOf is the candidate fault an error carries, if any.
func FaultOf(err error) (*Fault, bool) {
	if err == nil {
		return nil, false
	}
	var fr Faulter
	if errors.As(err, &fr) {
		return fr.Fault()
	}
	var f *Fault
	if errors.As(err, &f) {
		return f, true
	}
	return nil, false
}

// ErrProblem is in the chain of an error that is the problem's, not a
// candidate's: its reference cannot be loaded or run (on a fresh worker), so
// no candidate can pass and the run ends. Backends mark their load failures
// with it.
var ErrProblem = errors.New("the problem cannot be loaded")
