package ui

import "errors"

var (
	// ErrNoDir marks a kernel or sweep dir that does not exist (New).
	ErrNoDir = errors.New("no such dir")
	// errNoHistory marks a kernel dir whose history file does not exist
	// (yet): its page says "no runs yet".
	errNoHistory = errors.New("no run history yet")
)
