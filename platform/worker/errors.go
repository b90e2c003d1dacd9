package worker

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// Sentinel errors.
var (
	// ErrProtocol: the worker wrote something that is not a protocol reply.
	ErrProtocol = errors.New("worker protocol error")
	// ErrClosed: the worker was closed.
	ErrClosed = errors.New("worker closed")
)

// ReplyError is an error reply from the worker. Kind is a stable name (a
// verification check or fault kind); Fatal means the worker is poisoned and
// exits.
type ReplyError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Fatal   bool   `json:"fatal"`
}

func (e *ReplyError) Error() string { return e.Kind + ": " + e.Message }

// ErrorKind is the reply's kind and message (platform.Kinder).
func (e *ReplyError) ErrorKind() (kind, message string) { return e.Kind, e.Message }

// Fault: the worker rejected what the candidate did, with the check's name.
func (e *ReplyError) Fault() (*platform.Fault, bool) {
	return &platform.Fault{Check: e.Kind, Reason: e.Message}, true
}

// ExitError reports a worker that died, with the end of its stderr.
type ExitError struct {
	Code   int
	Signal string
	Err    error
	Stderr string
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("worker exited")
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, ": %v", e.Err)
	case e.Signal != "":
		fmt.Fprintf(&b, " on signal %s", e.Signal)
	default:
		fmt.Fprintf(&b, " with code %d", e.Code)
	}
	if l := LastLine(e.Stderr); l != "" {
		fmt.Fprintf(&b, " (stderr: %s)", l)
	}
	return b.String()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Fault: the worker died while it ran the candidate.
func (e *ExitError) Fault() (*platform.Fault, bool) {
	return &platform.Fault{Check: "crash", Reason: "the worker process died while timing: " + e.Error()}, true
}

// TimeoutError reports a call that ran past its limit; the worker was killed.
type TimeoutError struct {
	Op     string
	After  time.Duration
	Stderr string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s timed out after %s; the worker was killed", e.Op, e.After)
}

// Fault: the candidate's call did not end.
func (e *TimeoutError) Fault() (*platform.Fault, bool) {
	return &platform.Fault{Check: "timeout", Reason: fmt.Sprintf("timing did not finish within %s; the worker was killed", e.After)}, true
}

// LastLine returns the last non-empty line of s, cut to 300 bytes.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if len(l) > 300 {
				l = l[:300] + "..."
			}
			return l
		}
	}
	return ""
}
