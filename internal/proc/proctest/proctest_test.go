package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestThisProcess(t *testing.T) {
	pid := os.Getpid()
	if s := State(pid); s == "" || s == "Z" {
		t.Errorf("State(self) = %q", s)
	}
	if Gone(pid) {
		t.Error("Gone(self)")
	}
	live, err := LiveInGroup(syscall.Getpgrp())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if !slices.Contains(live, pid) {
		t.Errorf("LiveInGroup(own group) = %v lacks %d", live, pid)
	}
}

func TestExitedProcess(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	// Reaped by Run: absent.
	pid := cmd.Process.Pid
	if !Gone(pid) || State(pid) != "" {
		t.Errorf("pid %d: Gone %v, State %q", pid, Gone(pid), State(pid))
	}
	WaitGone(t, pid)
}

func TestClock(t *testing.T) {
	c := NewClock()
	a, b := c.After(time.Second), c.After(3*time.Second)
	fired := func(ch <-chan time.Time) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if !fired(c.After(0)) || c.Pending() != 2 {
		t.Fatalf("After(0) must fire at once; %d pending, want 2", c.Pending())
	}
	c.Advance(999 * time.Millisecond)
	if fired(a) || fired(b) {
		t.Fatal("a timer fired early")
	}
	c.Advance(time.Millisecond)
	if !fired(a) || fired(b) || c.Pending() != 1 {
		t.Fatalf("after 1s: want only the 1s timer fired, %d pending", c.Pending())
	}
	c.Advance(time.Hour)
	if !fired(b) || c.Pending() != 0 {
		t.Fatal("the 3s timer did not fire")
	}
}

func TestWaitLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ready")
	go func() {
		// A line written in two parts: WaitLine returns only the whole one.
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		f.WriteString("12")
		f.WriteString("34\nrest")
	}()
	if got := WaitLine(t, path); got != "1234" {
		t.Errorf("WaitLine = %q, want 1234", got)
	}
}

// TestDescendants: a shell's child and grandchild are below this process,
// this process is not below the shell.
func TestDescendants(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command("/bin/sh", "-c", `sh -c 'sleep 30' & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; wait`, "sh", ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	inner, err := strconv.Atoi(WaitLine(t, ready))
	if err != nil {
		t.Fatal(err)
	}
	below, err := Descendants(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if !slices.Contains(below, cmd.Process.Pid) || !slices.Contains(below, inner) {
		t.Errorf("Descendants(self) = %v, want %d and %d among them", below, cmd.Process.Pid, inner)
	}
	if under, _ := Descendants(cmd.Process.Pid); slices.Contains(under, os.Getpid()) || !slices.Contains(under, inner) {
		t.Errorf("Descendants(shell) = %v", under)
	}
	_ = syscall.Kill(inner, syscall.SIGKILL)
}
