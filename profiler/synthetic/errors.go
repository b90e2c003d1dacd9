package synthetic

import "errors"

// Sentinel errors of the package.
var (
	// ErrUnknownDType is returned for a tensor dtype whose element size is not known.
	ErrUnknownDType = errors.New("unknown tensor dtype")
	// ErrBadShape is returned for a tensor with a negative dimension.
	ErrBadShape = errors.New("bad tensor shape")
	// ErrNoTime is returned when no positive time was measured.
	ErrNoTime = errors.New("no measured time")
)
