// Package proctest checks, in tests, that supervised processes are gone. It
// reads /proc (Linux); a zombie waiting for its parent (or for init) to reap
// it counts as gone. It also has what such tests synchronise with: a
// program's ready file (WaitLine), a fake clock for timeouts (Clock), and
// the bound of a wait (Patience), which guards against a hang and is never
// what a test asserts.
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
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		t.Fatalf("child pid: %q is not a pid", data)
	}
	return pid
}

// WaitGone waits for pid to be gone (signals are asynchronous, and a
// killed process needs the CPU to die) and fails the test, killing pid, if
// it is still there after Patience.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(Patience(t))
	for !Gone(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d survived the group kill", pid)
		}
		time.Sleep(pollInterval)
	}
}

// pollInterval is how often the waits here look again.
const pollInterval = 10 * time.Millisecond

// Patience bounds a wait for something that will happen unless the code
// under test is broken (a program's ready signal, a process's exit): the
// time left before the test binary's deadline (go test -timeout), less a
// margin for the test's cleanup, so that a hung test fails with its own
// message instead of the binary's panic; 10 minutes when the test has no
// deadline. On a loaded machine a program that imports torch may take
// minutes to start: a wait is a guard against a hang, never a timing
// assertion.
func Patience(t testing.TB) time.Duration {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return 10 * time.Minute
	}
	dl, ok := d.Deadline()
	if !ok {
		return 10 * time.Minute
	}
	left := time.Until(dl)
	return max(left-min(left/10, 30*time.Second), time.Second)
}

// Wait polls cond until it holds and fails the test, saying stuck, when it
// does not within Patience.
func Wait(t testing.TB, stuck string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Patience(t))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(stuck)
		}
		time.Sleep(pollInterval)
	}
}

// Await waits for done to be closed and fails the test, saying stuck, when
// it is not within Patience.
func Await(t testing.TB, done <-chan struct{}, stuck string) {
	t.Helper()
	timer := time.NewTimer(Patience(t))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatal(stuck)
	}
}

// WaitLine waits until the file at path holds a whole line -- a test
// program's ready signal, such as its pid, written when it has started --
// and returns that first line without its newline.
func WaitLine(t testing.TB, path string) string {
	t.Helper()
	var line string
	Wait(t, "no line in "+path+": the program never signalled that it is ready", func() bool {
		b, err := os.ReadFile(path)
		first, _, ok := strings.Cut(string(b), "\n")
		line = first
		return err == nil && ok
	})
	return line
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

// Descendants lists the pids of the processes whose chain of parents reaches
// pid (at most 64 steps up); the error says /proc cannot be read.
func Descendants(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := stat(e.Name())
		if err != nil || len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q, n := parent[p], 0; q > 1 && n < 64; q, n = parent[q], n+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}
