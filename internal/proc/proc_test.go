package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kagent-dev/kagent/internal/proc/proctest"
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

// TestRunTimeoutKillsGroup: the program leaves a child that holds the
// output pipe; the timeout kills both, and Run does not wait on the pipe.
func TestRunTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	c := sh(`sleep 300 & echo $! > "$PIDFILE"; echo started; wait`)
	c.Env = []string{"PIDFILE=" + pidFile}
	c.Timeout = 300 * time.Millisecond
	start := time.Now()
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 || res.Err == nil || res.Output != "started\n" {
		t.Errorf("Run = %+v; want a timed-out kill with the output", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %s", d)
	}
	proctest.WaitGone(t, proctest.ReadPID(t, pidFile))
}

func TestRunIgnoringSIGTERMGetsSIGKILL(t *testing.T) {
	c := sh(`trap "" TERM; echo ready; while :; do sleep 0.05; done`)
	c.Timeout = 200 * time.Millisecond
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("Run = %+v; want a timed-out kill", res)
	}
}

func TestRunCallerCancel(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Cancel once the program has started.
		for {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	c := sh("touch started; sleep 300")
	c.Dir, c.Timeout = dir, time.Minute
	res, err := Run(ctx, c)
	if !errors.Is(err, context.Canceled) || res.TimedOut {
		t.Fatalf("Run = %+v, %v; want context.Canceled", res, err)
	}
}
