package kerneldir

import (
	"errors"

	"github.com/kagent-kernels/kagent/harness"
)

// Sentinel errors.
var (
	// ErrInvalid marks a kernel dir that cannot be used as it is; the message
	// names the file and what to change.
	ErrInvalid = errors.New("invalid kernel dir")
	// ErrNoPython: no Python interpreter to run the static check.
	ErrNoPython = harness.ErrNoPython
)
