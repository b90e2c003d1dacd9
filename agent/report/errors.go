package report

import "errors"

// Sentinel errors. Test with errors.Is.
var (
	// ErrUnknownCandidate: Data.BestID or a parent names no candidate.
	ErrUnknownCandidate = errors.New("unknown candidate")
	// ErrDuplicateCandidate: two candidates share an ID.
	ErrDuplicateCandidate = errors.New("duplicate candidate id")
)
