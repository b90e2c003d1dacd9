package worker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kagent-kernels/kagent/harness"
	"github.com/kagent-kernels/kagent/internal/proc"
	"github.com/kagent-kernels/kagent/internal/sandbox"
	"github.com/kagent-kernels/kagent/platform"
	"golang.org/x/sys/unix"
)

// Candidates run in runner processes (runner.py), never in the worker that
// judges them. Runners are forked from a fork server of their own that runs
// inside the OS sandbox (internal/sandbox): its own user, PID, mount,
// network and IPC namespaces, a read-only view of Python and the harness, a
// private /tmp, the GPU's device nodes, no capabilities, seccomp and
// Landlock. The worker reaches that server only through a socket pair the
// supervisor hands it (fd 3, KAGENT_RUNNER_FD): there is no path a
// candidate could put another server behind.
//
// KAGENT_SANDBOX selects: "on" (the default) refuses to start a worker
// where the machine cannot sandbox; running candidates unsandboxed is the
// user's explicit choice: "auto" sandboxes where the machine allows it and
// otherwise runs runners unsandboxed with a warning, "off" never sandboxes.

// sandboxEnv is the variable that selects the runners' sandbox.
const sandboxEnv = "KAGENT_SANDBOX"

// Sandbox modes.
const (
	SandboxAuto = "auto"
	SandboxOn   = "on"
	SandboxOff  = "off"
)

// SandboxMode is the runners' sandbox setting from the environment.
func SandboxMode() (string, error) {
	switch m := strings.TrimSpace(strings.ToLower(os.Getenv(sandboxEnv))); m {
	case "", SandboxOn:
		return SandboxOn, nil
	case SandboxAuto, SandboxOff:
		return m, nil
	default:
		return "", fmt.Errorf("%s=%q: want auto, on or off", sandboxEnv, m)
	}
}

type runnerServer struct {
	cmd  *exec.Cmd
	ctrl *os.File // the supervisor's end of the control socket
	mu   sync.Mutex
	done chan struct{}
	tail *proc.Tail
	dir  string
}

// probeSandbox is sandbox.Probe; tests stand in a machine that cannot sandbox.
var probeSandbox = sandbox.Probe

var (
	// runnerMu guards runnerServers and gpuChecked. It is not forkMu: a
	// worker's fork server and its runner server start at the same time.
	runnerMu      sync.Mutex
	runnerServers = map[string]*runnerServer{}
	// gpuChecked remembers, per interpreter, whether CUDA starts in the
	// runners' sandbox.
	gpuChecked = map[string]error{}
)

// gpuCheckScript starts CUDA and, where the machine has a C compiler,
// builds and loads a C extension as Triton does for its launcher.
const gpuCheckScript = `import ctypes, shutil, subprocess, sys, sysconfig
import torch
torch.cuda.init()
print(torch.cuda.get_device_name())
cc = shutil.which("gcc") or shutil.which("cc")
if cc:
    with open("/tmp/check.c", "w") as f:
        f.write("#include <Python.h>\nint kagent_check(void) { return 7; }\n")
    r = subprocess.run([cc, "/tmp/check.c", "-O3", "-shared", "-fPIC", "-o", "/tmp/check.so",
                        "-I" + sysconfig.get_paths()["include"]], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("the C compiler %s fails in the sandbox: %s" % (cc, (r.stderr.strip().splitlines() or ["?"])[-1]))
    assert ctypes.CDLL("/tmp/check.so").kagent_check() == 7
`

// gpuInSandbox checks once per interpreter that CUDA starts inside the
// runners' sandbox (a runner that cannot reach the GPU would fail every
// candidate as a crash). Called with runnerMu held.
func gpuInSandbox(o Options) error {
	if err, ok := gpuChecked[o.Python]; ok {
		return err
	}
	err := func() error {
		dir, err := os.MkdirTemp("", "kagent-gpu-check-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		policy, python, err := runnerPolicy(o, dir, nil)
		if err != nil {
			return err
		}
		policy.ExtraFiles = nil
		cmd, err := sandbox.Command(policy, []string{python, "-c", gpuCheckScript})
		if err != nil {
			return err
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("CUDA or the C compiler Triton needs does not work in the runners' sandbox: %v: %s", err, lastLines(string(out), 1))
		}
		return nil
	}()
	gpuChecked[o.Python] = err
	return err
}

func (s *runnerServer) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// runnerServerFor returns the sandboxed runner server for o's configuration,
// starting it when needed. (nil, nil): runners are not sandboxed (off, or
// auto on a machine that cannot).
func runnerServerFor(ctx context.Context, o Options) (*runnerServer, error) {
	mode, err := SandboxMode()
	if err != nil {
		return nil, err
	}
	if mode == SandboxOff || len(o.Command) > 0 {
		return nil, nil
	}
	if r := probeSandbox(); !r.Available {
		if mode == SandboxOn {
			return nil, fmt.Errorf("%w: %s", platform.ErrNoSandbox, r.Reason)
		}
		return nil, nil
	}
	key := forkKey(o, false)
	runnerMu.Lock()
	defer runnerMu.Unlock()
	if s := runnerServers[key]; s != nil && s.alive() {
		return s, nil
	}
	// On a GPU, the check that CUDA starts in the sandbox runs while the
	// server imports torch; a failed check stops the server.
	gpuErr := make(chan error, 1)
	if o.Device == "cuda" {
		go func() { gpuErr <- gpuInSandbox(o) }()
	} else {
		gpuErr <- nil
	}
	s, err := startRunnerServer(ctx, o)
	if gerr := <-gpuErr; gerr != nil {
		if s != nil {
			s.stop()
		}
		if mode == SandboxOn {
			return nil, fmt.Errorf("%w: %v", platform.ErrNoSandbox, gerr)
		}
		return nil, gerr
	}
	if err != nil {
		// Not platform.ErrNoSandbox yet: the worker's own start says first when the
		// interpreter itself is the problem (no torch, say).
		return nil, err
	}
	runnerServers[key] = s
	return s, nil
}

// runnerPolicy is what a runner may see: Python and the harness read-only,
// the GPU's device nodes, a private /tmp (also its HOME and Triton cache).
// It returns the interpreter to run in the sandbox (o.Python's own
// executable, not a launcher that finds it).
func runnerPolicy(o Options, harnessDir string, ctrl *os.File) (sandbox.Policy, string, error) {
	python, ro, err := sandbox.PythonPaths(o.Python)
	if err != nil {
		return sandbox.Policy{}, "", err
	}
	ro = append(ro, harnessDir)
	// The GPU's user-space driver, a C compiler for Triton's launcher, CPU
	// and PCI topology (read-only).
	// (/usr/libexec: the compiler's own programs on some distributions.)
	for _, p := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/libexec", "/usr/include", "/usr/local/cuda", "/usr/local/nvidia",
		"/sys/devices/system/cpu", "/sys/bus/pci", "/sys/devices", "/etc/alternatives"} {
		if _, err := os.Stat(p); err == nil {
			ro = append(ro, p)
		}
	}
	for _, p := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if filepath.IsAbs(p) {
			if _, err := os.Stat(p); err == nil {
				ro = append(ro, p)
			}
		}
	}
	var devices []string
	for _, g := range []string{"/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/kfd", "/dev/dri/*"} {
		m, _ := filepath.Glob(g)
		devices = append(devices, m...)
	}
	env := scrubbedEnv(os.Environ(), "/tmp", Options{HarnessDir: harnessDir, Device: o.Device, Env: o.Env})
	env = append(env, sandboxHome...)
	return sandbox.Policy{
		ReadOnly: ro,
		Devices:  devices,
		Env:      lastWins(env),
		Dir:      "/tmp",
		TmpMiB:   8192,
		Limits:   sandbox.Limits{OpenFiles: openFilesLimit()},
		ExtraFiles: []*os.File{
			ctrl,
		},
	}, python, nil
}

// openFilesLimit is the runners' RLIMIT_NOFILE: 65536, or the hard limit
// kagent has when that is lower (it cannot be raised).
func openFilesLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err == nil && r.Max < 65536 {
		return r.Max
	}
	return 65536
}

// lastWins keeps the last value of each variable.
func lastWins(env []string) []string {
	seen := map[string]int{}
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := seen[name]; ok {
			out[i] = kv
			continue
		}
		seen[name] = len(out)
		out = append(out, kv)
	}
	return out
}

func startRunnerServer(ctx context.Context, o Options) (*runnerServer, error) {
	parent := harness.CacheDir()
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("runner server: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "rs-")
	if err != nil {
		return nil, fmt.Errorf("runner server: %w", err)
	}
	fail := func(err error) (*runnerServer, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("runner server: %w", err)
	}
	hdir := filepath.Join(dir, "h")
	if _, err := harness.Write(hdir); err != nil {
		return fail(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "runner-control"), os.NewFile(uintptr(fds[1]), "runner-control")
	defer theirs.Close()
	policy, python, err := runnerPolicy(o, hdir, theirs)
	if err != nil {
		mine.Close()
		return fail(err)
	}
	s := &runnerServer{ctrl: mine, done: make(chan struct{}), tail: proc.NewTail(stderrTailSize), dir: dir}
	started := make(chan error, 1)
	ready := make(chan error, 1)
	// The sandbox's init dies with the thread that started it (Pdeathsig):
	// start it from a locked thread that lives until the sandbox ends.
	go func() {
		runtime.LockOSThread()
		cmd, err := sandbox.Command(policy, []string{python, "-u", "-m", "kagent_harness.forkserver", "--fd", "3"})
		if err != nil {
			started <- err
			return
		}
		sink, closeSink := proc.StderrSink(s.tail, "runners")
		cmd.Stderr = sink
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			started <- err
			return
		}
		s.cmd = cmd
		started <- nil
		go func() {
			line, err := bufio.NewReader(out).ReadString('\n')
			if err == nil && strings.TrimSpace(line) != "ready" {
				err = fmt.Errorf("unexpected first line %q", strings.TrimSpace(line))
			}
			ready <- err
			_, _ = io.Copy(io.Discard, out)
		}()
		_ = cmd.Wait()
		closeSink()
		mine.Close()
		os.RemoveAll(dir)
		close(s.done)
	}()
	if err := <-started; err != nil {
		mine.Close()
		return fail(err)
	}
	if err := awaitReady(ctx, ready, s.done, o.StartTimeout); err != nil {
		s.stop()
		return nil, fmt.Errorf("runner server: %w: %s", err, lastLines(s.tail.String(), 3))
	}
	return s, nil
}

// connect returns a new judge connection to the server: one end of a socket
// pair whose other end the server receives over the control socket.
func (s *runnerServer) connect() (*os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("connect to the runner server: %w", err)
	}
	judge, server := os.NewFile(uintptr(fds[0]), "runner-server"), os.NewFile(uintptr(fds[1]), "judge")
	defer server.Close()
	s.mu.Lock()
	err = unix.Sendmsg(int(s.ctrl.Fd()), []byte("j"), unix.UnixRights(int(server.Fd())), nil, 0)
	s.mu.Unlock()
	if err != nil {
		judge.Close()
		return nil, fmt.Errorf("connect to the runner server: %w", err)
	}
	return judge, nil
}

func (s *runnerServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
