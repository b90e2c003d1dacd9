package worker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kagent-dev/kagent/internal/sandbox"
)

// TestRunnersSandboxed: where the machine can sandbox, a worker's runners
// come from a fork server in the OS sandbox: another PID namespace, no
// capabilities, none of the supervisor's environment.
func TestRunnersSandboxed(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if r := sandbox.Probe(); !r.Available {
		t.Skipf("this machine cannot sandbox: %s", r.Reason)
	}
	t.Setenv(sandboxEnv, SandboxOn)
	t.Setenv("KAGENT_TEST_SECRET_TOKEN", "must-not-leak")
	w, err := Start(context.Background(), Options{Python: py, Device: "cpu", Env: []string{"CUDA_VISIBLE_DEVICES=", "KAGENT_TEST=runners-sandboxed"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.Hello().Sandboxed {
		t.Fatal("hello does not say the worker's candidates are sandboxed")
	}
	var server *runnerServer
	forkMu.Lock()
	for k, s := range runnerServers {
		if strings.Contains(k, "runners-sandboxed") {
			server = s
		}
	}
	forkMu.Unlock()
	if server == nil || server.cmd == nil {
		t.Fatal("no runner server was started")
	}
	// The sandbox's init is the server's parent; the server runs in the new
	// PID namespace.
	init := server.cmd.Process.Pid
	kids, _ := os.ReadFile(filepath.Join("/proc", itoa(init), "task", itoa(init), "children"))
	pids := strings.Fields(string(kids))
	if len(pids) != 1 {
		t.Fatalf("the sandbox's init has children %q, want the fork server alone", pids)
	}
	pid := pids[0]
	mine, _ := os.Readlink("/proc/self/ns/pid")
	theirs, err := os.Readlink(filepath.Join("/proc", pid, "ns", "pid"))
	if err != nil || theirs == mine {
		t.Fatalf("the runner server shares the supervisor's PID namespace (%s, %v)", theirs, err)
	}
	status, _ := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if !strings.Contains(string(status), "CapEff:\t0000000000000000") {
		t.Fatalf("the runner server holds capabilities:\n%s", status)
	}
	env, _ := os.ReadFile(filepath.Join("/proc", pid, "environ"))
	if strings.Contains(string(env), "must-not-leak") {
		t.Fatal("the supervisor's environment reached the runner server")
	}
	cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	if !strings.Contains(string(cmdline), "kagent_harness.forkserver") {
		t.Fatalf("the sandbox runs %q, not the fork server", cmdline)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
