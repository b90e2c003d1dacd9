package sandbox

import "errors"

var (
	// ErrUnavailable: this machine cannot build the sandbox (no user
	// namespaces, no seccomp, ...). Probe's Reason says why.
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrPolicy: the Policy or the program is not valid.
	ErrPolicy = errors.New("sandbox policy")
)
