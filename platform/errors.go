package platform

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrUnknown: no platform is registered under the name asked for.
	ErrUnknown = errors.New("unknown platform")
	// ErrNotExecuted: the platform does not run kernels (noop): nothing was
	// verified, timed or profiled.
	ErrNotExecuted = errors.New("not executed (dry run)")
	// ErrNoPlatform: auto-detection found no GPU stack on this machine.
	ErrNoPlatform = errors.New("no GPU platform found")
	// ErrNoSandbox: candidates must run in the OS sandbox (KAGENT_SANDBOX
	// on, the default) and this machine cannot give them one.
	ErrNoSandbox = errors.New("the OS sandbox for candidates is unavailable")
)

// NotImplementedError says a platform does not offer an ability yet.
type NotImplementedError struct {
	Platform string
	What     string
}

func (e *NotImplementedError) Error() string {
	return fmt.Sprintf("%s platform: %s is not implemented", e.Platform, e.What)
}

// UnavailableError says a platform cannot run on this machine and what is
// missing for it to do so.
type UnavailableError struct {
	Platform string
	Missing  string // what is missing, e.g. "ROCm (no /dev/kfd, rocminfo not on PATH)"
	Hint     string // what to do about it
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("%s platform unavailable: %s", e.Platform, e.Missing)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}
