package configs

import "errors"

// Sentinel errors. Messages wrapping them say what to change.
var (
	// ErrInvalid marks configuration that cannot be used (bad YAML, unknown
	// key, out-of-range value).
	ErrInvalid = errors.New("invalid configuration")
	// ErrUnknownConfig marks a --strategy name that names no config.
	ErrUnknownConfig = errors.New("unknown config")
)
