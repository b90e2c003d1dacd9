package store

import "errors"

// Sentinel errors. Errors returned by the store wrap one of these where a
// caller may want to branch; test with errors.Is.
var (
	// ErrNotFound: no run, round or candidate with that id.
	ErrNotFound = errors.New("not found")
	// ErrDuplicate: a run, round or candidate with that id already exists.
	ErrDuplicate = errors.New("already exists")
	// ErrTransition: the change is not allowed from the record's current
	// state (a candidate timed twice, a finished round or run changed, a
	// round started while another is open).
	ErrTransition = errors.New("not allowed in this state")
	// ErrInvalid: an argument is missing or malformed.
	ErrInvalid = errors.New("invalid argument")
	// ErrNewerSchema: the file was written by a newer kagent; this one does
	// not know its schema and will not touch it.
	ErrNewerSchema = errors.New("store written by a newer kagent")
	// ErrNotStore: the file is an SQLite database but not a kagent store.
	ErrNotStore = errors.New("not a kagent store")
)
