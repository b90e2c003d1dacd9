package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Errors of the package wrap one of them, directly or through
// a typed error below, so callers branch with errors.Is.
var (
	// ErrNotInstalled: a Slurm command (sbatch, sacct, ...) is not on PATH.
	ErrNotInstalled = errors.New("slurm command not found")
	// ErrRejected: sbatch refused the job (see *SubmitError for Slurm's words).
	ErrRejected = errors.New("slurm rejected the job")
	// ErrNoJob: the sweep dir holds no Slurm job record.
	ErrNoJob = errors.New("no slurm job recorded")
	// ErrActive: the recorded job still has pending or running tasks.
	ErrActive = errors.New("slurm job still active")
	// ErrTasksFailed: some array tasks ended without success (see
	// *TasksFailedError for which, with their logs).
	ErrTasksFailed = errors.New("slurm tasks failed")
	// ErrInvalid: the spec or options are wrong.
	ErrInvalid = errors.New("invalid slurm job spec")
	// ErrCommand: a Slurm command failed or timed out.
	ErrCommand = errors.New("slurm command failed")
)

// CommandError is a Slurm command that exited non-zero or timed out.
type CommandError struct {
	Name     string // sbatch, sacct, ...
	Args     []string
	ExitCode int    // -1 when it did not exit by itself
	Stderr   string // what the command printed on stderr (bounded)
	Err      error  // ErrNotInstalled, ErrCommand or the context's error
}

func (e *CommandError) Error() string {
	msg := e.Name
	switch {
	case errors.Is(e.Err, ErrNotInstalled):
		return fmt.Sprintf("%s: %v (install Slurm's client commands or put them on PATH)", e.Name, e.Err)
	case e.ExitCode >= 0:
		msg += " exited with " + strconv.Itoa(e.ExitCode)
	default:
		msg += ": " + e.Err.Error()
	}
	if e.Stderr != "" {
		msg += ": " + foldLines(e.Stderr)
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// SubmitError is a submission sbatch refused, with Slurm's reason.
type SubmitError struct {
	Message string // Slurm's error lines, joined
	Script  string // the batch script that was submitted
}

func (e *SubmitError) Error() string {
	return fmt.Sprintf("sbatch rejected the job: %s (script %s)", e.Message, e.Script)
}

func (e *SubmitError) Unwrap() error { return ErrRejected }

// TasksFailedError names the array tasks that ended without success.
type TasksFailedError struct {
	JobID string
	Tasks []Task // the failed tasks, by index
}

func (e *TasksFailedError) Error() string {
	parts := make([]string, len(e.Tasks))
	for i, t := range e.Tasks {
		what := string(t.State)
		if t.ExitCode != nil && *t.ExitCode != 0 {
			what += " exit " + strconv.Itoa(*t.ExitCode)
		}
		parts[i] = fmt.Sprintf("task %d %s, log %s", t.Index, what, t.Log)
	}
	return fmt.Sprintf("slurm job %s: %d task(s) failed: %s", e.JobID, len(e.Tasks), strings.Join(parts, "; "))
}

func (e *TasksFailedError) Unwrap() error { return ErrTasksFailed }
