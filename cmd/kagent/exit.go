package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/termtext"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// Exit codes. Scripts and CI jobs may rely on them.
const (
	ExitOK            = 0   // done; for optimize: a verified improvement was found
	ExitError         = 1   // a run failed
	ExitUsage         = 2   // bad flags, configuration or kernel dir: fix the input
	ExitNoImprovement = 3   // optimize finished without a verified improvement
	ExitUnavailable   = 4   // this machine lacks what the run needs (GPU stack, torch, triton, device memory, profiler)
	ExitInterrupted   = 130 // stopped by SIGINT or SIGTERM
)

// exitError carries an exit code chosen by a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// withCode attaches an exit code to err.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// usageError marks a mistake in how kagent was called.
func usageError(format string, args ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, args...))
}

// exitCode picks the exit code for err.
func exitCode(err error) int {
	var ee *exitError
	var ue *platform.UnavailableError
	var ni *platform.NotImplementedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case asLack(err) != nil:
		return ExitUnavailable
	case errors.Is(err, configs.ErrInvalid), errors.Is(err, configs.ErrUnknownConfig),
		errors.Is(err, kerneldir.ErrInvalid), errors.Is(err, platform.ErrUnknown):
		return ExitUsage
	case errors.As(err, &ue), errors.As(err, &ni), errors.Is(err, platform.ErrNoPlatform),
		errors.Is(err, kerneldir.ErrNoPython), errors.Is(err, platform.ErrNoSandbox), errors.Is(err, llm.ErrUnreachable):
		return ExitUnavailable
	}
	return ExitError
}

// report prints err as one line and returns the exit code.
func report(w io.Writer, err error) int {
	code := exitCode(err)
	if err == nil {
		return code
	}
	msg := err.Error()
	if code == ExitInterrupted {
		msg = "interrupted"
	} else if le := asLack(err); le != nil && code == ExitUnavailable {
		// What the machine lacks, not the steps that ran into it.
		msg = le.Error()
	}
	if msg != "" {
		fmt.Fprintln(w, "kagent: "+oneLine(msg))
	}
	return code
}

// oneLine folds a message onto one line, its control characters escaped.
func oneLine(s string) string {
	return strings.Join(strings.Fields(termtext.Line(s)), " ")
}

// absPath makes p absolute (best effort).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
