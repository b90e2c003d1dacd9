package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kagent-kernels/kagent/internal/proc/proctest"
)

// advDiagEnv are the settings a run of the adversarial suite passes on to
// kagent when set in its own environment (to read a case's run, or to run the
// suite with a default changed); nothing else of the caller's reaches kagent.
var advDiagEnv = []string{"KAGENT_LOG_LEVEL=", "KAGENT_TRACE=", "KAGENT_DEVICE_BUFFERS="}

// advLogsDir is KAGENT_ADV_LOGS/<case>, made, or "" when unset: each case's
// kagent output and its workers' stderr (KAGENT_WORKER_STDERR) are kept
// there, and a hung run's stacks.
func advLogsDir(name string) string {
	root := os.Getenv("KAGENT_ADV_LOGS")
	if root == "" {
		return ""
	}
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	return dir
}

// dumpStacks asks a hung run for its stacks before it is killed: SIGUSR1 to
// every kagent_harness process below pid (the harness writes each thread's
// Python stack to its stderr, which KAGENT_WORKER_STDERR keeps), then
// SIGQUIT to kagent itself (Go writes every goroutine's stack to stderr and
// exits).
func dumpStacks(pid int) {
	below, _ := proctest.Descendants(pid)
	for _, p := range below {
		if cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline")); err == nil &&
			strings.Contains(string(cmd), "kagent_harness") {
			_ = syscall.Kill(p, syscall.SIGUSR1)
		}
	}
	time.Sleep(time.Second)
	_ = syscall.Kill(pid, syscall.SIGQUIT)
	time.Sleep(time.Second)
}
