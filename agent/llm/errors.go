package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrNoCode: a reply holds no Python code block.
	ErrNoCode = errors.New("no python code in reply")
	// ErrNoJSON: a reply holds no JSON object.
	ErrNoJSON = errors.New("no json object in reply")
	// ErrEmptyReply: the provider answered with no text.
	ErrEmptyReply = errors.New("empty reply")
	// ErrMissingKey: the environment variable holding an API key is unset.
	ErrMissingKey = errors.New("api key not set")
	// ErrUnknownProvider: the configured provider is not one kagent knows.
	ErrUnknownProvider = errors.New("unknown llm provider")
	// ErrBudgetExceeded is matched by every *BudgetExceededError.
	ErrBudgetExceeded = errors.New("llm budget exceeded")
	// ErrReplayMiss is matched by every *ReplayMissError.
	ErrReplayMiss = errors.New("no recorded exchange")
)

// ErrUnreachable matches an UnreachableError.
var ErrUnreachable = errors.New("the llm provider cannot be reached")

// UnreachableError is a call that gave up because the provider cannot be
// reached (the connection failed after the retries) or refuses the key (401,
// 403): every further call would fail the same way, so a run stops on it.
type UnreachableError struct {
	Provider string
	// URL is the server called (the base URL, or the provider's API).
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	at := e.Provider
	if e.URL != "" {
		at += " at " + e.URL
	}
	return fmt.Sprintf("llm provider %s cannot be reached: %v (check that the server is up, llm.base_url and the key; "+
		"kagent doctor shows which keys are set)", at, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is matches ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// APIError is an HTTP error answered by a provider. The retry policy branches
// on StatusCode; Message never contains a key (it is redacted).
type APIError struct {
	Provider   string
	StatusCode int
	// Message is the provider's error text, redacted and cut to 500 bytes.
	Message string
	// RetryAfter is the delay the provider asked for (Retry-After), if any.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s api: %d %s", e.Provider, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden {
		msg += " (check the api key and its permissions)"
	}
	return msg
}

// Temporary reports whether the error is worth retrying (429 or 5xx).
func (e *APIError) Temporary() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// MissingKeyError says which environment variable to set. It matches ErrMissingKey.
type MissingKeyError struct {
	Provider string
	Var      string
	// Step is the purpose whose llm.steps entry needs the key ("" for llm: itself).
	Step Purpose
}

func (e *MissingKeyError) Error() string {
	who := "llm provider " + e.Provider
	if e.Step != "" {
		who = fmt.Sprintf("llm.steps.%s: provider %s", e.Step, e.Provider)
	}
	return fmt.Sprintf("%s: api key not set: export %s=<key> (keys are read from the environment only)", who, e.Var)
}

// Is makes errors.Is(err, ErrMissingKey) true.
func (e *MissingKeyError) Is(target error) bool { return target == ErrMissingKey }

// BudgetExceededError stops further calls once a cap is reached. The loop turns
// it into a clean stop. It matches ErrBudgetExceeded.
type BudgetExceededError struct {
	// Cap names the cap: "max_calls", "max_tokens", "max_usd" or "max_wall_time".
	Cap   string
	Limit string
	Used  string
}

func (e *BudgetExceededError) Error() string {
	return fmt.Sprintf("llm budget exceeded: %s %s reached (used %s); no further llm calls are made", e.Cap, e.Limit, e.Used)
}

// Is makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetExceededError) Is(target error) bool { return target == ErrBudgetExceeded }

// ReplayMissError is returned by a Replayer asked for a request it has no
// record of. It matches ErrReplayMiss.
type ReplayMissError struct {
	Dir         string
	Fingerprint string
	Purpose     Purpose
	Model       string
	// Nearest describes the closest recorded exchange ("" if the dir is empty).
	Nearest string
}

func (e *ReplayMissError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay %s: no recorded exchange for fingerprint %s (purpose %q, model %q)",
		e.Dir, e.Fingerprint, e.Purpose, e.Model)
	if e.Nearest != "" {
		b.WriteString("; nearest recorded: " + e.Nearest)
	} else {
		b.WriteString("; the directory holds no exchanges")
	}
	b.WriteString(" (the prompt changed since recording? record again with --llm-record)")
	return b.String()
}

// Is makes errors.Is(err, ErrReplayMiss) true.
func (e *ReplayMissError) Is(target error) bool { return target == ErrReplayMiss }
