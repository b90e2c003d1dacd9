package tune

import (
	"errors"

	"github.com/kagent-kernels/kagent/harness"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrNoPython: the Python interpreter that parses kernels is missing.
	ErrNoPython = harness.ErrNoPython
	// ErrSyntax: the kernel source does not parse as Python.
	ErrSyntax = errors.New("kernel source does not parse")
	// ErrSpan: a knob's span does not hold its value in the source (the knob
	// was found in another version of the source).
	ErrSpan = errors.New("knob span does not match the source")
	// ErrUnknownKnob: a change names a knob that is not in the list.
	ErrUnknownKnob = errors.New("unknown knob")
)
