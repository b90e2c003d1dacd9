// Package proctest checks, in tests, that supervised processes are gone. It
// reads /proc (Linux); a zombie waiting for its parent (or for init) to reap
// it counts as gone.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stat returns the fields of /proc/<pid>/stat after the command name:
// state, ppid, pgrp, ...
func stat(pid string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil, err
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])), nil
}

// State is the state letter of a process ("S", "Z", ...), "" when it does
// not exist.
func State(pid int) string {
	f, err := stat(strconv.Itoa(pid))
	if err != nil || len(f) == 0 {
		return ""
	}
	return f[0]
}

// Gone reports whether pid has exited: absent, or a zombie waiting for its
// parent. Without /proc, it asks the kernel whether pid exists.
func Gone(pid int) bool {
	f, err := stat(strconv.Itoa(pid))
	if err != nil {
		return syscall.Kill(pid, 0) != nil
	}
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// ReadPID reads the pid a test program recorded in path.
func ReadPID(t testing.TB, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("child pid not recorded: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// WaitGone waits for pid to be gone (signals are asynchronous, so it allows
// a few seconds) and fails the test, killing pid, if it is not.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !Gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d survived the group kill", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LiveInGroup lists the pids of non-zombie processes in group pgid; the
// error says /proc cannot be read.
func LiveInGroup(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := stat(e.Name())
		if err != nil || len(f) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid && f[0] != "Z" {
			live = append(live, pid)
		}
	}
	return live, nil
}
