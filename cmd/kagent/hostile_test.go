package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runIn is run with TMPDIR set and a hang guard (a generous bound: a
// hostile kernel dir must fail, not block kagent).
func runIn(t *testing.T, dir, tmp string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KAGENT_CACHE_DIR="+t.TempDir(), "TMPDIR="+tmp)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kagent %s did not finish:\n%s\n%s", strings.Join(args, " "), out.String(), errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// assertEmpty fails when dir holds anything.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("left in TMPDIR: %s", strings.Join(names, ", "))
	}
}

// TestHostileKernelDirs: a FIFO named problem.py and a kagent.yaml linked to
// /dev/zero end kagent at once with one line naming the file and the exit
// code of bad input, before any worker starts.
func TestHostileKernelDirs(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(dir string) error
		want string
	}{
		{"fifo problem.py", func(dir string) error {
			if err := os.Remove(filepath.Join(dir, "problem.py")); err != nil {
				return err
			}
			return syscall.Mkfifo(filepath.Join(dir, "problem.py"), 0o644)
		}, "problem.py is a FIFO (named pipe), not a regular file"},
		{"kagent.yaml to /dev/zero", func(dir string) error {
			return os.Symlink("/dev/zero", filepath.Join(dir, "kagent.yaml"))
		}, "kagent.yaml is a symbolic link to /dev/zero, outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"problem.py", "input.py"} {
				b, err := os.ReadFile(filepath.Join(repoRoot(t), "agent", "testdata", "relu_scale", f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.make(dir); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			for _, verb := range []string{"eval", "optimize"} {
				oneLineError(t, runIn(t, dir, tmp, verb, "--kernel-dir", ".", "--platform", "cpu"), ExitUsage, tc.want)
			}
			assertEmpty(t, tmp)
		})
	}
}

// TestEvalLeavesNoTempAndShowsEscapesInert: eval of a passing kernel, of a
// kernel whose failure reason carries terminal escapes, and of a problem
// whose loading crashes the worker leaves TMPDIR empty; the escapes are
// shown as text, never written raw.
func TestEvalLeavesNoTempAndShowsEscapesInert(t *testing.T) {
	dir := cpuKernelDir(t)
	tmp := t.TempDir()
	r := runIn(t, dir, tmp, "eval", "--kernel-dir", ".", "--platform", "cpu")
	if r.code != ExitOK {
		t.Fatalf("eval of a passing kernel: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	assertEmpty(t, tmp)

	hostile := filepath.Join(dir, "hostile.py")
	src := "import torch\n\n\ndef kernel_function(x, y):\n    raise ValueError(\"\\x1b[2K\\rPASSED \\u202e\\x1b]0;title\\x07\")\n"
	if err := os.WriteFile(hostile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, dir, tmp, "eval", "--kernel-dir", ".", "--platform", "cpu", "--kernel", "hostile.py")
	if r.code != ExitError {
		t.Fatalf("eval of a failing kernel: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		if strings.ContainsAny(out, "\x1b\r\x07\u202e") {
			t.Errorf("%s holds a raw control character: %q", name, out)
		}
	}
	if !strings.Contains(r.stdout, `\x1b[2K`) || !strings.Contains(r.stdout, `\u202e\x1b]0;title\x07`) || strings.Contains(r.stdout, "verify:   PASSED") {
		t.Errorf("the failure is not shown as inert text:\n%s", r.stdout)
	}
	assertEmpty(t, tmp)

	crash := filepath.Join(dir, "problem.py")
	b, err := os.ReadFile(crash)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crash, []byte(strings.Replace(string(b), "def get_inputs():\n", "def get_inputs():\n    import os\n    os._exit(3)\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runIn(t, dir, tmp, "eval", "--kernel-dir", ".", "--platform", "cpu")
	if r.code == ExitOK {
		t.Fatalf("eval with a crashing problem passed:\n%s", r.stdout)
	}
	assertEmpty(t, tmp)
}

// TestInterruptLeavesNoTemp: SIGTERM while the worker starts leaves TMPDIR
// empty.
func TestInterruptLeavesNoTemp(t *testing.T) {
	dir := cpuKernelDir(t)
	tmp := t.TempDir()
	cmd := exec.Command(binary, "eval", "--kernel-dir", ".", "--platform", "cpu")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KAGENT_CACHE_DIR="+t.TempDir(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })    // a test stuck below
	deadline := time.Now().Add(5 * time.Minute) // a hang guard, not a timing assertion
	for {
		if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no worker folder appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("kagent did not stop after SIGTERM")
	}
	assertEmpty(t, tmp)
}
