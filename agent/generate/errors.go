package generate

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrNoLLM: generation needs an LLM client and none was given.
	ErrNoLLM = errors.New("no llm configured")
	// ErrInvalidInput: the Input lacks a task, a platform or a session.
	ErrInvalidInput = errors.New("invalid generate input")
	// ErrAllFailed: no seed produced a kernel that passed verification (the
	// error is an *AllFailedError).
	ErrAllFailed = errors.New("all seeds failed")
)

// AllFailedError: every seed ended without a kernel that passed
// verification. Seeds says how each one ended.
type AllFailedError struct {
	Seeds []SeedOutcome
}

func (e *AllFailedError) Error() string {
	parts := make([]string, len(e.Seeds))
	for i, s := range e.Seeds {
		parts[i] = fmt.Sprintf("seed %d: %s", s.Seed, s.Last())
	}
	return fmt.Sprintf("generate: all %d seeds failed: %s", len(e.Seeds), strings.Join(parts, "; "))
}

// Unwrap makes errors.Is(err, ErrAllFailed) hold.
func (e *AllFailedError) Unwrap() error { return ErrAllFailed }
