package proc

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/proc/proctest"
)

func sh(script string) Command {
	return Command{Path: "/bin/sh", Args: []string{"-c", script}, KillGrace: 100 * time.Millisecond}
}

func TestRunExit(t *testing.T) {
	tests := []struct {
		name   string
		c      Command
		exit   int
		output string
		failed bool
	}{
		{"success", sh("echo out; echo err >&2"), 0, "out\nerr\n", false},
		{"exit status", sh("echo boom >&2; exit 3"), 3, "boom\n", true},
		{"environment and directory", Command{Path: "/bin/sh", Args: []string{"-c", `echo "$KAGENT_PROC_TEST $(basename "$PWD")"`},
			Env: []string{"KAGENT_PROC_TEST=set"}, Dir: "/"}, 0, "set /\n", false},
		{"output tail", Command{Path: "/bin/sh", Args: []string{"-c", "echo 0123456789"}, TailBytes: 4}, 0, "789\n", false},
		{"not started", Command{Path: "/nonexistent/kagent-proc-test"}, -1, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tt.exit || res.Output != tt.output || (res.Err != nil) != tt.failed || res.TimedOut {
				t.Errorf("Run = %+v; want exit %d, output %q, failed %v", res, tt.exit, tt.output, tt.failed)
			}
		})
	}
	var ee *exec.ExitError
	if res, _ := Run(context.Background(), sh("exit 3")); !errors.As(res.Err, &ee) {
		t.Errorf("Err = %T, want *exec.ExitError", res.Err)
	}
}

// runAsync starts Run and returns a channel closed when it has returned,
// with its results.
func runAsync(ctx context.Context, c Command) (done <-chan struct{}, res *Result, err *error) {
	ch := make(chan struct{})
	res, err = new(Result), new(error)
	go func() {
		defer close(ch)
		*res, *err = Run(ctx, c)
	}()
	return ch, res, err
}

// TestRunTimeoutKillsGroup: the program leaves a child that holds the
// output pipe; the timeout, passed once both run, kills both, and Run does
// not wait on the pipe (the child would hold it for an hour).
func TestRunTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	clock := proctest.NewClock()
	c := sh(`echo started; sleep 3600 & echo $! > "$PIDFILE"; wait`)
	c.Env = []string{"PIDFILE=" + pidFile}
	c.Timeout, c.After = 300*time.Millisecond, clock.After
	done, res, err := runAsync(context.Background(), c)
	proctest.WaitLine(t, pidFile)
	clock.Advance(c.Timeout)
	proctest.Await(t, done, "Run still waits after the timeout")
	if *err != nil {
		t.Fatal(*err)
	}
	if !res.TimedOut || res.ExitCode != -1 || res.Err == nil || res.Output != "started\n" {
		t.Errorf("Run = %+v; want a timed-out kill with the output", *res)
	}
	proctest.WaitGone(t, proctest.ReadPID(t, pidFile))
}

// TestRunIgnoringSIGTERMGetsSIGKILL: a program that ignores SIGTERM (its
// trap set before the timeout passes) is killed with SIGKILL.
func TestRunIgnoringSIGTERMGetsSIGKILL(t *testing.T) {
	dir := t.TempDir()
	clock := proctest.NewClock()
	c := sh(`trap "" TERM; echo ready > ready; while :; do sleep 0.05; done`)
	c.Dir, c.Timeout, c.After = dir, 200*time.Millisecond, clock.After
	done, res, err := runAsync(context.Background(), c)
	proctest.WaitLine(t, filepath.Join(dir, "ready"))
	clock.Advance(c.Timeout)
	proctest.Await(t, done, "Run still waits after the timeout")
	if *err != nil {
		t.Fatal(*err)
	}
	var ee *exec.ExitError
	if !res.TimedOut || res.ExitCode != -1 || !errors.As(res.Err, &ee) {
		t.Fatalf("Run = %+v; want a timed-out kill", *res)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the program ended with %v, want SIGKILL", ee)
	}
}

// TestRunCallerCancel: the caller's cancellation, once the program runs,
// ends it with ctx's error; it is not a timeout (whose clock never moves).
func TestRunCallerCancel(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := sh("echo started > started; sleep 3600")
	c.Dir, c.Timeout, c.After = dir, time.Minute, proctest.NewClock().After
	done, res, err := runAsync(ctx, c)
	proctest.WaitLine(t, filepath.Join(dir, "started"))
	cancel()
	proctest.Await(t, done, "Run still waits after the cancellation")
	if !errors.Is(*err, context.Canceled) || res.TimedOut {
		t.Fatalf("Run = %+v, %v; want context.Canceled", *res, *err)
	}
}

// TestRunTimeoutUsesTheRealClock: without After, Timeout is wall-clock
// time (the program would run for an hour).
func TestRunTimeoutUsesTheRealClock(t *testing.T) {
	c := sh("sleep 3600")
	c.Timeout = 10 * time.Millisecond
	done, res, err := runAsync(context.Background(), c)
	proctest.Await(t, done, "Run ignored its timeout")
	if *err != nil || !res.TimedOut {
		t.Errorf("Run = %+v, %v; want a timeout", *res, *err)
	}
}

// TestRunPrepared: a prepared command runs with exactly its own
// environment, in a process group of its own that a timeout kills whole;
// a command that cannot be prepared is a run that did not start.
func TestRunPrepared(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	clock := proctest.NewClock()
	c := Command{Timeout: 300 * time.Millisecond, After: clock.After, KillGrace: 100 * time.Millisecond,
		Prepared: func(ctx context.Context) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `echo "only=$ONLY home=$HOME"; sleep 3600 & echo $! > "$PIDFILE"; wait`)
			cmd.Env = []string{"ONLY=yes", "PIDFILE=" + pidFile}
			return cmd, nil
		}}
	done, res, err := runAsync(context.Background(), c)
	proctest.WaitLine(t, pidFile)
	clock.Advance(c.Timeout)
	proctest.Await(t, done, "Run still waits after the timeout")
	if *err != nil {
		t.Fatal(*err)
	}
	if !res.TimedOut || res.Output != "only=yes home=\n" {
		t.Errorf("Run = %+v; want a timed-out kill of a program that saw only its own environment", *res)
	}
	proctest.WaitGone(t, proctest.ReadPID(t, pidFile))

	bad := errors.New("no sandbox here")
	res2, err2 := Run(context.Background(), Command{Prepared: func(context.Context) (*exec.Cmd, error) { return nil, bad }})
	if err2 != nil || !errors.Is(res2.Err, bad) || res2.ExitCode != -1 {
		t.Errorf("Run = %+v, %v; want the preparation's error in the result", res2, err2)
	}
}
