package proctest

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
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
