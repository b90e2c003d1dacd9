package worker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/sandbox"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// TestRunnersSandboxed: where the machine can sandbox, a worker's runners
// come from a fork server in the OS sandbox: another PID namespace, no
// capabilities, none of the supervisor's environment.
func TestRunnersSandboxed(t *testing.T) {
	py := sandboxedPython(t)
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
	server := runnerServerOf(t, "runners-sandboxed")
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

// runnerServerOf is the started runner server whose configuration key has
// tag (a KAGENT_TEST value).
func runnerServerOf(t *testing.T, tag string) *runnerServer {
	t.Helper()
	var server *runnerServer
	forkMu.Lock()
	for k, s := range runnerServers {
		if strings.Contains(k, tag) {
			server = s
		}
	}
	forkMu.Unlock()
	if server == nil || server.cmd == nil {
		t.Fatal("no runner server was started")
	}
	return server
}

// TestRunnersConfinedInTheSandbox: a runner that imported a candidate has
// stacked the harness's own seccomp filter (confine.py: it signals no
// process but itself) on the sandbox's, which the fork server alone has.
func TestRunnersConfinedInTheSandbox(t *testing.T) {
	sandboxedPython(t)
	t.Setenv(sandboxEnv, SandboxOn)
	dir, _ := filepath.Abs(filepath.Join("testdata", "problems", "add_relu"))
	s := cpuSessionWith(t, dir, EngineOptions{}, func(c *SessionConfig) {
		c.Env = append(c.Env, "KAGENT_TEST=runners-confined")
	})
	if v, err := s.Verify(context.Background(), cpuCandidate("add_relu_ok")); err != nil || !v.Passed {
		t.Fatalf("add_relu_ok: %v %+v", err, v)
	}
	server := runnerServerOf(t, "runners-confined")
	children := func(pid string) []string {
		kids, _ := os.ReadFile(filepath.Join("/proc", pid, "task", pid, "children"))
		return strings.Fields(string(kids))
	}
	filters := func(pid string) int {
		status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Seccomp_filters:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n
			}
		}
		t.Skip("this kernel does not report Seccomp_filters")
		return 0
	}
	servers := children(itoa(server.cmd.Process.Pid))
	if len(servers) != 1 {
		t.Fatalf("the sandbox's init has children %q, want the fork server alone", servers)
	}
	base := filters(servers[0])
	runners := children(servers[0])
	if len(runners) == 0 {
		t.Fatal("no runner is kept after a verification")
	}
	for _, pid := range runners {
		if got := filters(pid); got != base+1 {
			t.Errorf("runner %s has %d seccomp filters, want the fork server's %d and its own", pid, got, base)
		}
	}
}

// TestRunnerSandboxSeesGPU: on a machine with an NVIDIA GPU, a Python in the
// runners' sandbox initialises CUDA (device nodes, driver libraries, /proc
// and /sys entries the driver needs are in the policy). It prints what the
// sandbox shows when it cannot.
func TestRunnerSandboxSeesGPU(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if _, err := os.Stat("/dev/nvidiactl"); err != nil {
		t.Skip("no NVIDIA GPU")
	}
	if r := sandbox.Probe(); !r.Available {
		t.Skipf("this machine cannot sandbox: %s", r.Reason)
	}
	dir := t.TempDir()
	policy, python, err := runnerPolicy(Options{Python: py, Device: "cuda"}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy.ExtraFiles = nil
	script := `
import ctypes, os
print("dev", sorted(n for n in os.listdir("/dev") if "nvidia" in n))
print("LD_LIBRARY_PATH", os.environ.get("LD_LIBRARY_PATH"))
for p in ("/proc/driver/nvidia/version", "/proc/driver/nvidia/params"):
    print(p, os.path.exists(p))
try:
    lib = ctypes.CDLL("libcuda.so.1")
    print("cuInit", lib.cuInit(0))
except OSError as e:
    print("libcuda", e)
import torch
torch.cuda.init()
print("device", torch.cuda.get_device_name())
`
	cmd, err := sandbox.Command(policy, []string{python, "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("in the sandbox:\n%s", out)
	if err != nil || !strings.Contains(string(out), "device ") {
		host, _ := exec.Command("sh", "-c", "ls -la /dev/nvidia* /dev/nvidia-caps 2>&1; echo LD_LIBRARY_PATH=$LD_LIBRARY_PATH; ldconfig -p | grep -E 'libcuda|libnvidia-ml' | head; grep -E 'nvidia|cuda' /proc/self/mountinfo | head -20").CombinedOutput()
		t.Fatalf("CUDA does not start in the runners' sandbox (%v); on the host:\n%s", err, host)
	}
}

// TestRunnerSandboxCompilesC: a runner can build and load a C extension the
// way Triton builds its launcher on a GPU (the system C compiler, Python's
// headers, -shared -fPIC, then dlopen), and Python's sysconfig works.
func TestRunnerSandboxCompilesC(t *testing.T) {
	py := sandboxedPython(t)
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc on this machine")
	}
	policy, python, err := runnerPolicy(Options{Python: py, Device: "cpu"}, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	policy.ExtraFiles = nil
	script := `
import ctypes, os, subprocess, sys, sysconfig
src = "/tmp/k.c"
with open(src, "w") as f:
    f.write('#include <Python.h>\nint kagent_answer(void) { return 42; }\n')
inc = sysconfig.get_paths()["include"]
cmd = [sys.argv[1], src, "-O3", "-shared", "-fPIC", "-Wno-psabi", "-o", "/tmp/k.so", "-I" + inc]
r = subprocess.run(cmd, capture_output=True, text=True)
print("rc", r.returncode, r.stderr[-2000:])
print("answer", ctypes.CDLL("/tmp/k.so").kagent_answer())
`
	cmd, err := sandbox.Command(policy, []string{python, "-c", script, cc})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "answer 42") {
		t.Fatalf("a C extension cannot be built in the runners' sandbox (%v):\n%s", err, out)
	}
}

// sandboxedPython is KAGENT_PYTHON on a machine that can sandbox; the test
// skips otherwise.
func sandboxedPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if r := sandbox.Probe(); !r.Available {
		t.Skipf("this machine cannot sandbox: %s", r.Reason)
	}
	return py
}

// TestUnsandboxedOnlyByChoice: on a machine that cannot sandbox, a worker
// does not start unless the user chose to run candidates without the
// sandbox (KAGENT_SANDBOX=auto or off), and its hello says which.
func TestUnsandboxedOnlyByChoice(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	saved := probeSandbox
	probeSandbox = func() sandbox.Report { return sandbox.Report{Reason: "user namespaces are disabled (test)"} }
	defer func() { probeSandbox = saved }()
	opts := Options{Python: py, Device: "cpu", Env: []string{"CUDA_VISIBLE_DEVICES=", "KAGENT_TEST=unsandboxed-by-choice"}}

	for _, mode := range []string{"", SandboxOn} {
		t.Setenv(sandboxEnv, mode)
		w, err := Start(context.Background(), opts)
		if err == nil {
			w.Close()
			t.Fatalf("KAGENT_SANDBOX=%q: a worker started although the machine cannot sandbox", mode)
		}
		if !errors.Is(err, platform.ErrNoSandbox) || !strings.Contains(err.Error(), "user namespaces are disabled (test)") ||
			!strings.Contains(err.Error(), "KAGENT_SANDBOX=auto or off") {
			t.Fatalf("KAGENT_SANDBOX=%q: the error does not say why and what to do: %v", mode, err)
		}
	}
	for mode, want := range map[string]string{SandboxAuto: "KAGENT_SANDBOX=auto allows that", SandboxOff: "KAGENT_SANDBOX=off"} {
		t.Setenv(sandboxEnv, mode)
		w, err := Start(context.Background(), opts)
		if err != nil {
			t.Fatalf("KAGENT_SANDBOX=%s: %v", mode, err)
		}
		h := w.Hello()
		w.Close()
		if h.Sandboxed || !strings.Contains(h.Isolation(), want) {
			t.Fatalf("KAGENT_SANDBOX=%s: isolation %q (sandboxed %v), want it to say %q", mode, h.Isolation(), h.Sandboxed, want)
		}
	}
}

// TestUserTestInSandbox: a kernel dir's test.py imports the candidate, so it
// runs in a runner of its own, in the sandbox: a file of the user's is out of
// its sight. Unsandboxed by the user's choice, the same test sees the file.
func TestUserTestInSandbox(t *testing.T) {
	py := sandboxedPython(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("user's file"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	problem, err := os.ReadFile(filepath.Join("testdata", "problems", "add_relu", "problem.py"))
	if err != nil {
		t.Fatal(err)
	}
	test := "import os, sys\nimport kernel, problem\n" +
		"sys.exit(3 if os.path.exists(" + strconv.Quote(secret) + ") else 0)\n"
	for name, text := range map[string]string{"problem.py": string(problem), "test.py": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cand, _ := filepath.Abs(filepath.Join("testdata", "candidates", "cpu", "add_relu_ok.py"))
	task := &kerneldir.Task{Dir: dir, ProblemPath: filepath.Join(dir, "problem.py"), TestPath: filepath.Join(dir, "test.py")}
	for _, c := range []struct {
		mode   string
		passed bool
	}{{SandboxOn, true}, {SandboxOff, false}} {
		t.Setenv(sandboxEnv, c.mode)
		sess, err := OpenSession(context.Background(), task, SessionConfig{
			Python: py, Device: "cpu", CacheDir: t.TempDir(), Env: []string{"CUDA_VISIBLE_DEVICES="},
			Engine: EngineOptions{VerifyTimeout: 3 * time.Minute, LoadTimeout: 3 * time.Minute},
		})
		if err != nil {
			t.Fatalf("KAGENT_SANDBOX=%s: %v", c.mode, err)
		}
		v, err := sess.Verify(context.Background(), platform.Candidate{ID: "c", Path: cand})
		sess.Close()
		if err != nil {
			t.Fatalf("KAGENT_SANDBOX=%s: %v", c.mode, err)
		}
		if v.Passed != c.passed || (!c.passed && (v.Failure != "user_test" || !strings.Contains(v.Reason, "status 3"))) {
			t.Fatalf("KAGENT_SANDBOX=%s: passed %v (%s: %s), want passed %v (test.py %s the user's file)", c.mode,
				v.Passed, v.Failure, v.Reason, c.passed, map[bool]string{true: "cannot see", false: "sees"}[c.passed])
		}
	}
}
