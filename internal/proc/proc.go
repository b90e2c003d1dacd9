// Package proc runs a program as a supervised subprocess: in its own process
// group, the whole group signalled (SIGTERM, then SIGKILL after a grace
// period) when a timeout passes or the caller's context ends, never waiting
// long on pipes that leftover children hold open, and with a bounded tail of
// its output kept for error messages.
//
// It serves the profilers, which run a tool (ncu, rocprofv3) once per
// profile. The Python worker keeps its own lifecycle (platform/worker) and
// shares only Tail.
package proc

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Defaults of a Command.
const (
	DefaultKillGrace = 2 * time.Second
	DefaultTailBytes = 16 << 10
)

// Command is a program to run under supervision.
type Command struct {
	// Path is the program (already resolved) and Args its arguments.
	Path string
	Args []string
	// Dir is the working directory ("" = the caller's).
	Dir string
	// Env is added to the caller's environment (KEY=VALUE; later entries win).
	Env []string
	// Timeout bounds the run (0 = only the caller's context does).
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL to the group
	// (0 = DefaultKillGrace). Wait gives up on the output pipes one second
	// after that.
	KillGrace time.Duration
	// TailBytes is how much of the output Result.Output keeps
	// (0 = DefaultTailBytes).
	TailBytes int
	// After starts the Timeout's timer (nil = time.After). Tests pass a
	// fake clock's, so that the timeout passes when they say, however
	// loaded the machine is.
	After func(time.Duration) <-chan time.Time
	// Prepared, when set, builds the command in place of Path, Args, Dir
	// and Env: a program that must start in a particular way, such as
	// inside an OS sandbox (internal/sandbox.CommandContext), whose
	// environment is complete as built. Run still puts it in a process
	// group of its own, takes its output and signals the group. The
	// goroutine that runs it stays on one OS thread until it ends, so a
	// parent-death signal bound to the starting thread does not fire early.
	Prepared func(ctx context.Context) (*exec.Cmd, error)
}

// Result is how a run ended.
type Result struct {
	// Err is exec.Cmd.Run's error: nil after a zero exit, else an
	// *exec.ExitError or why the program did not start.
	Err error
	// ExitCode is the exit status, -1 when the program did not exit by
	// itself (killed by a signal, or never started).
	ExitCode int
	// Output is the end of stdout and stderr, interleaved as written.
	Output string
	// TimedOut is set when Timeout passed and the group was killed.
	TimedOut bool
}

// Run runs c and waits for it. When Timeout passes or ctx ends while the
// program runs, its process group gets SIGTERM, then SIGKILL after
// KillGrace; whatever the group left behind is killed when Run returns.
// The error is ctx.Err() when the caller's context ended a failed run;
// every other outcome, a timeout included, is in the Result.
func Run(ctx context.Context, c Command) (Result, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.Timeout > 0 {
		// The timer starts before the program does: a test that waits
		// for the program's ready signal then advances its fake clock
		// finds the timer set.
		after := c.After
		if after == nil {
			after = time.After
		}
		expired := after(c.Timeout)
		go func() {
			select {
			case <-expired:
				cancel()
			case <-runCtx.Done():
			}
		}()
	}
	grace := c.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	tailBytes := c.TailBytes
	if tailBytes <= 0 {
		tailBytes = DefaultTailBytes
	}

	tail := NewTail(tailBytes)
	var cmd *exec.Cmd
	if c.Prepared != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var err error
		if cmd, err = c.Prepared(runCtx); err != nil {
			return Result{Err: err, ExitCode: -1}, nil
		}
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
	} else {
		cmd = exec.CommandContext(runCtx, c.Path, c.Args...)
		cmd.Dir = c.Dir
		cmd.Env = append(os.Environ(), c.Env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Stdout, cmd.Stderr = tail, tail
	var (
		timerMu   sync.Mutex
		killTimer *time.Timer
	)
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		timerMu.Lock()
		killTimer = time.AfterFunc(grace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		timerMu.Unlock()
		return nil
	}
	// Children that keep the output pipes open after the group was
	// signalled do not hold Wait beyond this.
	cmd.WaitDelay = grace + time.Second

	runErr := cmd.Run()
	if cmd.Process != nil {
		// Whatever the group left behind (the profiled program, its
		// children) goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	timerMu.Lock()
	if killTimer != nil {
		killTimer.Stop()
	}
	timerMu.Unlock()

	res := Result{Err: runErr, ExitCode: -1, Output: tail.String()}
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	// The context first: a killed program also exits non-zero.
	if runErr != nil && runCtx.Err() != nil {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		res.TimedOut = true
	}
	return res, nil
}
