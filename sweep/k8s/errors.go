package k8s

import "errors"

// ErrInvalid: the spec or options cannot make a valid Job.
var ErrInvalid = errors.New("invalid kubernetes job spec")
