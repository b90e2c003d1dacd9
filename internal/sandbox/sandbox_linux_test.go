//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kagent-kernels/kagent/internal/pythontest"
	"github.com/kagent-kernels/kagent/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	if action := os.Getenv(helperEnv); action != "" {
		os.Exit(runHelper(action))
	}
	os.Exit(m.Run())
}

// available skips the test when this machine cannot sandbox.
func available(t *testing.T) sandbox.Report {
	t.Helper()
	r := sandbox.Probe()
	if !r.Available {
		t.Skipf("sandbox unavailable here: %s", r.Reason)
	}
	return r
}

// self is the test binary, which runs the helper actions inside.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// helperPolicy runs the test binary's action with the extra environment.
// The system's libraries are there for a test binary linked dynamically
// (as -race builds are).
func helperPolicy(t *testing.T, action string, env ...string) sandbox.Policy {
	return sandbox.Policy{
		ReadOnly: append(systemPaths(), self(t)),
		Env:      append([]string{helperEnv + "=" + action, "GORACE=" + os.Getenv("GORACE")}, env...),
		TmpMiB:   16,
	}
}

type outcome struct {
	code           int
	stdout, stderr string
}

// run runs the test binary in the sandbox of p and waits for it.
func run(t *testing.T, p sandbox.Policy) outcome {
	t.Helper()
	cmd, err := sandbox.Command(p, []string{self(t)})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return outcome{code: wait(t, cmd), stdout: stdout.String(), stderr: stderr.String()}
}

// wait waits for cmd with a hang guard and returns its exit status.
func wait(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	if cmd.Process == nil {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the sandbox did not end (hang guard)")
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestProbe(t *testing.T) {
	r := sandbox.Probe()
	t.Logf("probe: %s", r)
	if !r.Available {
		if r.Reason == "" {
			t.Fatal("unavailable without a reason")
		}
		t.Skipf("sandbox unavailable here: %s", r.Reason)
	}
	if !r.UserNS || !r.PIDNS || !r.MountNS || !r.NetNS || !r.IPCNS || !r.Seccomp || r.Reason != "" {
		t.Errorf("available but %+v", r)
	}
	if strings.Contains(r.String(), "unavailable") {
		t.Errorf("String: %q", r.String())
	}
}

// TestAdversary: each move of a program that is root in the sandbox fails.
func TestAdversary(t *testing.T) {
	r := available(t)
	roDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(roDir, "existing"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	sockPath := filepath.Join(t.TempDir(), "host.sock")
	listenUnix(t, sockPath)
	abstract := fmt.Sprintf("kagent-sandbox-test-%d", os.Getpid())
	listenUnix(t, "@"+abstract)
	port := listenTCP(t)
	home, _ := os.UserHomeDir()
	env := []string{
		"SANDBOX_TEST_RO=" + roDir,
		"SANDBOX_TEST_SECRET=" + secret,
		"SANDBOX_TEST_SOCKET=" + sockPath,
		"SANDBOX_TEST_ABSTRACT=" + abstract,
		"SANDBOX_TEST_PORT=" + strconv.Itoa(port),
		"SANDBOX_TEST_HOST_PID=" + strconv.Itoa(os.Getpid()),
		"SANDBOX_TEST_HOME=" + home,
	}
	names := []string{
		"remount-ro-rw", "setattr-ro-rw", "write-ro", "overwrite-ro-file", "mount-proc", "mount-tmpfs-over-ro",
		"fsopen", "open-tree", "umount-proc", "umount-ro", "chroot", "pivot-root", "unshare-user", "clone-newuser",
		"setns-init", "proc1-root", "proc1-environ", "proc1-fd", "ptrace-init", "vm-read-init", "mknod-char",
		"mknodat-block", "raise-nofile", "raise-core", "kill-host", "unix-socket-path", "unix-socket-abstract",
		"tcp-loopback", "interface-up", "read-host-secret", "read-shadow", "read-host-home", "write-sysctl",
		"sysrq", "write-dev", "open-tty", "tiocsti", "bpf", "keyctl", "write-proc",
	}
	if len(names) != len(moves) {
		t.Fatalf("%d moves listed, %d defined", len(names), len(moves))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if name == "write-proc" && r.LandlockABI == 0 {
				t.Skip("only Landlock stops it")
			}
			p := helperPolicy(t, name, env...)
			p.ReadOnly = append(p.ReadOnly, roDir)
			p.Limits.OpenFiles = 256
			o := run(t, p)
			if o.code != 0 || !strings.HasPrefix(o.stdout, "blocked: ") {
				t.Errorf("%s was not stopped: exit %d\nstdout: %s\nstderr: %s", name, o.code, o.stdout, o.stderr)
			}
			t.Log(strings.TrimSpace(o.stdout))
		})
	}
	if b, _ := os.ReadFile(filepath.Join(roDir, "existing")); string(b) != "keep" {
		t.Errorf("the read-only file now holds %q", b)
	}
}

func listenUnix(t *testing.T, path string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 8); err != nil {
		t.Fatal(err)
	}
}

func listenTCP(t *testing.T) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 8); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*unix.SockaddrInet4).Port
}

// TestOnlyOwnProcesses: /proc shows the init (1) and the program only.
func TestOnlyOwnProcesses(t *testing.T) {
	available(t)
	o := run(t, helperPolicy(t, "pids"))
	f := strings.Fields(o.stdout)
	if o.code != 0 || len(f) != 4 || f[0] != "1" || f[1] != f[3] {
		t.Errorf("pids inside: %q (exit %d, %s)", o.stdout, o.code, o.stderr)
	}
}

// TestFirstToDie: what runs in the sandbox is the kernel's first choice
// when the machine runs out of memory.
func TestFirstToDie(t *testing.T) {
	available(t)
	o := run(t, helperPolicy(t, "oom-score"))
	if o.code != 0 || strings.TrimSpace(o.stdout) != strconv.Itoa(sandbox.OOMScoreAdj) {
		t.Errorf("oom_score_adj inside: %q, want %d (exit %d, %s)", o.stdout, sandbox.OOMScoreAdj, o.code, o.stderr)
	}
}

// TestEnvExact: the environment is the policy's, nothing more.
func TestEnvExact(t *testing.T) {
	available(t)
	t.Setenv("SANDBOX_TEST_LEAK", "must not arrive")
	p := helperPolicy(t, "env", "A=1", "B=two words")
	o := run(t, p)
	got := strings.Split(strings.TrimSpace(o.stdout), "\n")
	if o.code != 0 || !slices.Equal(got, p.Env) {
		t.Errorf("env inside: %q, want %q (exit %d, %s)", got, p.Env, o.code, o.stderr)
	}
}

// TestCapabilities: no capability of any kind, no_new_privs, a seccomp
// filter.
func TestCapabilities(t *testing.T) {
	available(t)
	o := run(t, helperPolicy(t, "status"))
	want := map[string]string{
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2",
	}
	seen := 0
	sc := bufio.NewScanner(strings.NewReader(o.stdout))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		if w, ok := want[k]; ok {
			seen++
			if strings.TrimSpace(v) != w {
				t.Errorf("%s = %s, want %s", k, strings.TrimSpace(v), w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("status lacks fields (exit %d):\n%s%s", o.code, o.stdout, o.stderr)
	}
}

// TestReadWrite: a read-write path is written through to the host; the
// private /tmp works and does not reach the host's.
func TestReadWrite(t *testing.T) {
	available(t)
	rw := t.TempDir()
	p := helperPolicy(t, "write", "SANDBOX_TEST_PATH="+filepath.Join(rw, "out"))
	p.ReadWrite = []string{rw}
	if o := run(t, p); o.code != 0 {
		t.Fatalf("write to the read-write dir: exit %d %s %s", o.code, o.stdout, o.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(rw, "out")); err != nil || string(b) != "written inside" {
		t.Errorf("host sees %q, %v", b, err)
	}
	name := fmt.Sprintf("/tmp/kagent-sandbox-private-%d", os.Getpid())
	o := run(t, helperPolicy(t, "write", "SANDBOX_TEST_PATH="+name))
	if o.code != 0 {
		t.Fatalf("write to the private /tmp: exit %d %s %s", o.code, o.stdout, o.stderr)
	}
	if _, err := os.Stat(name); err == nil {
		os.Remove(name)
		t.Error("a file written to the sandbox's /tmp appeared in the host's")
	}
}

// TestFiles: ExtraFiles arrive as 3, 4; no other inherited fd does, not
// even one the caller leaked without close-on-exec.
func TestFiles(t *testing.T) {
	available(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	leak, err := unix.Open(secret, unix.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	r3, w3, _ := os.Pipe()
	r4, w4, _ := os.Pipe()
	defer r3.Close()
	defer r4.Close()
	p := helperPolicy(t, "fds", "SANDBOX_TEST_FILES=2")
	p.ExtraFiles = []*os.File{w3, w4}
	cmd, err := sandbox.Command(p, []string{self(t)})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w3.Close()
	w4.Close()
	if code := wait(t, cmd); code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "[0 1 2 3 4]" {
		t.Errorf("fds inside: %s (fd %d leaked by the caller must not be there)", got, leak)
	}
	for i, r := range []*os.File{r3, r4} {
		b := make([]byte, 64)
		n, _ := r.Read(b)
		if want := fmt.Sprintf("hello from fd %d\n", 3+i); string(b[:n]) != want {
			t.Errorf("fd %d carried %q, want %q", 3+i, b[:n], want)
		}
	}
}

// TestReopenOwnPipe: the program can reopen its stdout through /proc.
func TestReopenOwnPipe(t *testing.T) {
	available(t)
	if o := run(t, helperPolicy(t, "reopen-stdout")); o.code != 0 || o.stdout != "reopened\n" {
		t.Errorf("exit %d, stdout %q, stderr %s", o.code, o.stdout, o.stderr)
	}
}

// TestExitStatus: exit codes pass through; a signal becomes 128+N.
func TestExitStatus(t *testing.T) {
	available(t)
	for _, code := range []int{0, 1, 7, 42} {
		if o := run(t, helperPolicy(t, "exit", fmt.Sprintf("SANDBOX_TEST_CODE=%d", code))); o.code != code {
			t.Errorf("exit %d came out as %d (%s)", code, o.code, o.stderr)
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGHUP} {
		o := run(t, helperPolicy(t, "kill-self", fmt.Sprintf("SANDBOX_TEST_SIGNAL=%d", sig)))
		if o.code != 128+int(sig) {
			t.Errorf("killed by %v came out as %d, want %d (%s)", sig, o.code, 128+int(sig), o.stderr)
		}
	}
}

// TestSignals: SIGTERM to the init reaches the program; the program cannot
// kill or stop the init.
func TestSignals(t *testing.T) {
	available(t)
	cmd, err := sandbox.Command(helperPolicy(t, "wait-signal"), []string{self(t)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("program said %q", line)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := wait(t, cmd); code != 128+int(syscall.SIGTERM) {
		t.Errorf("SIGTERM to the sandbox: exit %d, want %d", code, 128+int(syscall.SIGTERM))
	}

	o := run(t, helperPolicy(t, "signal-init"))
	if o.code != 0 || !strings.HasPrefix(o.stdout, "alive") {
		t.Errorf("after signalling the init: exit %d %q %s", o.code, o.stdout, o.stderr)
	}
	t.Log(strings.TrimSpace(o.stdout))
}

// TestNoSurvivors: a grandchild that daemonizes (setsid twice, parent
// gone) dies with the sandbox.
func TestNoSurvivors(t *testing.T) {
	available(t)
	marker := fmt.Sprintf("kagent-sandbox-daemon-%d-%d", os.Getpid(), time.Now().UnixNano())
	o := run(t, helperPolicy(t, "daemonize", "SANDBOX_TEST_MARKER="+marker))
	if o.code != 0 || !strings.Contains(o.stdout, "daemon started") {
		t.Fatalf("daemonize: exit %d %q %s", o.code, o.stdout, o.stderr)
	}
	// The kernel kills the namespace's processes before the init's exit
	// is reported; the loop is only a guard against a slow reaper.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := withMarker(marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v outlived the sandbox", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// withMarker lists host processes whose command line holds marker.
func withMarker(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestSetupErrors: a bad policy is refused before anything starts; a
// program missing inside is a one-line error and ExitSetupFailed.
func TestSetupErrors(t *testing.T) {
	available(t)
	for _, p := range []sandbox.Policy{
		{ReadOnly: []string{"relative/path"}},
		{ReadOnly: []string{filepath.Join(t.TempDir(), "missing")}},
		{ReadOnly: []string{"/"}},
		{ReadWrite: []string{"/proc/self"}},
		{ReadOnly: []string{"/dev/null"}},
		{Devices: []string{"/etc/passwd"}},
		{ReadWrite: []string{"/sys/kernel"}},
	} {
		if _, err := sandbox.Command(p, []string{"/bin/true"}); !errors.Is(err, sandbox.ErrPolicy) {
			t.Errorf("policy %+v: %v, want ErrPolicy", p, err)
		}
	}
	if _, err := sandbox.Command(sandbox.Policy{}, []string{"no-such-program"}); !errors.Is(err, sandbox.ErrPolicy) {
		t.Errorf("unknown program: %v", err)
	}
	// The binary exists on the host but is not bound in.
	cmd, err := sandbox.Command(sandbox.Policy{}, []string{self(t)})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if code := wait(t, cmd); code != sandbox.ExitSetupFailed || !strings.HasPrefix(stderr.String(), "sandbox: start ") ||
		strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("unbound program: exit %d, stderr %q", code, stderr.String())
	}
	// Devices that do not exist are skipped.
	p := helperPolicy(t, "exit")
	p.Devices = []string{"/dev/nvidia-no-such-device"}
	if o := run(t, p); o.code != 0 {
		t.Errorf("missing device: exit %d %s", o.code, o.stderr)
	}
}

// systemPaths are what a dynamically linked system program needs.
func systemPaths() []string {
	var out []string
	for _, p := range []string{"/usr/bin", "/bin", "/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache"} {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// TestStartupCost logs what a sandbox adds to starting /bin/true.
func TestStartupCost(t *testing.T) {
	available(t)
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true program")
	}
	const n = 10
	measure := func(mk func() *exec.Cmd) time.Duration {
		start := time.Now()
		for range n {
			if code := wait(t, mk()); code != 0 {
				t.Fatalf("true exited %d", code)
			}
		}
		return time.Since(start) / n
	}
	plain := measure(func() *exec.Cmd { return exec.Command(truePath) })
	p := sandbox.Policy{ReadOnly: systemPaths()}
	boxed := measure(func() *exec.Cmd {
		cmd, err := sandbox.Command(p, []string{truePath})
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	})
	t.Logf("start-up of %s: plain %v, sandboxed %v (+%v)", truePath, plain, boxed, boxed-plain)
}

// TestPython: the venv's Python imports torch inside a sandbox built from
// PythonPaths.
func TestPython(t *testing.T) {
	available(t)
	py := pythontest.Triton(t)
	// Called through a launcher (as a pyenv shim finds the interpreter), which
	// cannot run in the sandbox: PythonPaths names the interpreter itself.
	shim := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexec "+py+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe, paths, err := sandbox.PythonPaths(shim)
	if err != nil {
		t.Fatal(err)
	}
	if exe == shim || !filepath.IsAbs(exe) {
		t.Fatalf("PythonPaths(%s) names %q to run, not the interpreter", shim, exe)
	}
	t.Logf("read-only: %v", paths)
	home, _ := os.UserHomeDir()
	for _, p := range paths {
		if p == "/" || p == "/etc" || p == "/usr" || p == home || !filepath.IsAbs(p) {
			t.Errorf("PythonPaths lists %s", p)
		}
	}
	cmd, err := sandbox.Command(sandbox.Policy{
		ReadOnly: append(paths, "/sys/devices/system/cpu"),
		Env:      []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "OMP_NUM_THREADS=1"},
		Dir:      "/tmp",
	}, []string{exe, "-c", "import torch, os; print(torch.__version__, sorted(os.listdir('/')))"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if code := wait(t, cmd); code != 0 {
		t.Fatalf("import torch: exit %d\n%s", code, stderr.String())
	}
	t.Logf("inside: %s", strings.TrimSpace(stdout.String()))
}

// TestPythonPathsAskedOnce: an interpreter is asked for its paths once per
// process (each ask is a Python start-up); a failed ask is not kept.
func TestPythonPathsAskedOnce(t *testing.T) {
	py := pythontest.Triton(t)
	dir := t.TempDir()
	count := filepath.Join(dir, "starts")
	shim := filepath.Join(dir, "python3")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\necho >> "+count+"\n[ -e "+dir+"/broken ] && exit 3\nexec "+py+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	starts := func() int {
		data, _ := os.ReadFile(count)
		return strings.Count(string(data), "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "broken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sandbox.PythonPaths(shim); err == nil {
		t.Fatal("a failing interpreter gave paths")
	}
	os.Remove(filepath.Join(dir, "broken"))
	exe1, paths1, err1 := sandbox.PythonPaths(shim)
	exe2, paths2, err2 := sandbox.PythonPaths(shim)
	if err1 != nil || err2 != nil || exe1 != exe2 || !slices.Equal(paths1, paths2) {
		t.Fatalf("answers differ: %q %v %v / %q %v %v", exe1, paths1, err1, exe2, paths2, err2)
	}
	if n := starts(); n != 2 {
		t.Errorf("the interpreter started %d times, want 2 (the failure, then one ask)", n)
	}
}
