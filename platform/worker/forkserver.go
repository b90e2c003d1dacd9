package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kagent-kernels/kagent/harness"
	"github.com/kagent-kernels/kagent/internal/proc"
)

// A fork server is a Python process that has imported torch, triton and the
// harness once and forks a fresh worker for each start (forkserver.py). A
// worker then costs a fork instead of seconds of imports; it is still a
// process of its own, in its own process group, that has never held another
// worker's problem or candidate (the server loads none and runs none).
//
// The supervisor still starts a process per worker: launch.py, which imports
// nothing heavy, hands its stdio to the server and exits with the worker's
// status. The forked worker joins the launcher's process group, so the
// worker's lifecycle (group kill, exit status, stderr tail) is unchanged.
//
// Servers are shared by the workers of one configuration (interpreter, device,
// environment, network isolation) within a kagent process and live as long as
// it does (they get SIGTERM when it exits and remove their own directory).
// KAGENT_FORKSERVER=0 turns them off.

// launchUnserved is launch.py's exit status when no fork server answered
// (or another process held its socket).
const launchUnserved = 75

// maxSocketDir keeps the socket path (dir + "/s") within the 108 bytes of a
// Unix socket address.
const maxSocketDir = 100

// forkServerEnv is the variable that turns fork servers off ("0").
const forkServerEnv = "KAGENT_FORKSERVER"

type forkServer struct {
	dir    string // private directory: the socket and the harness copy
	socket string
	pid    string // the server's process id, which the launcher checks
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{}
	tail   *proc.Tail
}

var (
	forkMu      sync.Mutex
	forkServers = map[string]*forkServer{}
	// forkFailed remembers configurations whose server could not start, so
	// that every worker of a broken setup does not pay a failed start again.
	forkFailed = map[string]error{}
	dropped    []*forkServer
)

func forkServersEnabled() bool {
	return strings.TrimSpace(os.Getenv(forkServerEnv)) != "0"
}

// forkKey identifies the workers a server may start: everything that is fixed
// in the server's own process (interpreter, device, isolation and the
// environment it imported torch under) must match.
//
// Cache locations are left out: Triton and torch.compile read them when
// they compile, after the fork, from the worker's own environment, so
// sessions with caches of their own (every test, every sweep problem) share
// a server.
func forkKey(o Options, isolate bool) string {
	var env []string
	for _, kv := range o.Env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(perRunCacheVars, name) {
			env = append(env, kv)
		}
	}
	return strings.Join([]string{o.Python, o.Device, fmt.Sprint(isolate), strings.Join(env, "\x00")}, "\x01")
}

// perRunCacheVars are read lazily by the libraries that use them.
var perRunCacheVars = []string{"TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"}

func (s *forkServer) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// forkServerFor returns a running server for o, starting one when needed; an
// error means workers of this configuration start the plain way.
func forkServerFor(ctx context.Context, o Options, isolate bool) (*forkServer, error) {
	key := forkKey(o, isolate)
	forkMu.Lock()
	defer forkMu.Unlock()
	if s := forkServers[key]; s != nil && s.alive() {
		return s, nil
	}
	if err := forkFailed[key]; err != nil {
		return nil, err
	}
	s, err := startForkServer(ctx, o, isolate)
	if err != nil {
		forkFailed[key] = err
		return nil, err
	}
	forkServers[key] = s
	return s, nil
}

func startForkServer(ctx context.Context, o Options, isolate bool) (*forkServer, error) {
	// In kagent's cache, not the temporary directory: a server lives as long
	// as the kagent process and removes its directory when it exits.
	parent := harness.CacheDir()
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("fork server: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "fs-")
	if err == nil && len(dir) > maxSocketDir {
		os.Remove(dir)
		dir, err = os.MkdirTemp("", "kagent-fs-")
	}
	if err != nil {
		return nil, fmt.Errorf("fork server: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, tmpDir), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fork server: %w", err)
	}
	hdir := filepath.Join(dir, "h")
	if _, err := harness.Write(hdir); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fork server: %w", err)
	}
	s := &forkServer{dir: dir, socket: filepath.Join(dir, "s"), done: make(chan struct{}), tail: proc.NewTail(stderrTailSize)}
	cmd := exec.Command(o.Python, "-u", "-m", "kagent_harness.forkserver", s.socket)
	cmd.Dir = dir
	so := o
	so.HarnessDir = hdir
	cmd.Env = scrubbedEnv(os.Environ(), dir, so)
	attr := sysProcAttr(isolate)
	attr.Pdeathsig = syscall.SIGTERM // it removes its directory on SIGTERM
	cmd.SysProcAttr = attr
	sink, closeSink := proc.StderrSink(s.tail, "forkserver")
	cmd.Stderr = sink
	stdin, err := cmd.StdinPipe()
	if err != nil {
		closeSink()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fork server: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		closeSink()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fork server: %w", err)
	}
	if err := cmd.Start(); err != nil {
		closeSink()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("fork server: %w", err)
	}
	s.cmd, s.stdin = cmd, stdin
	s.pid = fmt.Sprint(cmd.Process.Pid)
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("unexpected first line %q", strings.TrimSpace(line))
		}
		ready <- err
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		_ = cmd.Wait()
		closeSink()
		os.RemoveAll(dir)
		close(s.done)
	}()
	if err := awaitReady(ctx, ready, s.done, o.StartTimeout); err != nil {
		s.stop()
		return nil, fmt.Errorf("fork server: %w: %s", err, lastLines(s.tail.String(), 3))
	}
	return s, nil
}

// stop ends the server (its workers are killed with it).
func (s *forkServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.stdin.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// dropForkServer forgets s, so the next worker of its configuration starts
// a new server. s is left running for the workers it already started (they
// die with it); StopForkServers or kagent's exit ends it.
func dropForkServer(s *forkServer) {
	forkMu.Lock()
	defer forkMu.Unlock()
	for k, v := range forkServers {
		if v == s {
			delete(forkServers, k)
			dropped = append(dropped, s)
		}
	}
}

// StopForkServers ends every fork server of this process. Workers started
// from them die with them; call it when no worker is needed any more (kagent
// calls it before exiting, through platform/all's Shutdown; a server whose
// parent exits stops by itself).
func StopForkServers() {
	forkMu.Lock()
	defer forkMu.Unlock()
	for k, s := range forkServers {
		s.stop()
		delete(forkServers, k)
	}
	for _, s := range dropped {
		s.stop()
	}
	dropped = nil
	runnerMu.Lock()
	defer runnerMu.Unlock()
	for k, s := range runnerServers {
		s.stop()
		delete(runnerServers, k)
	}
}

// launchArgv is the command line of a worker forked from s: launch.py run
// from the source in this binary, so a copy a candidate rewrote on disk never
// runs in its place.
func (s *forkServer) launchArgv(python string) ([]string, error) {
	src, err := harness.ReadFile("launch.py")
	if err != nil {
		return nil, err
	}
	return []string{python, "-S", "-c", string(src), s.socket, s.pid}, nil
}

// awaitReady waits for a server's "ready" line (its reader's error on
// ready), its exit (done), the start-up timeout (0: 5 minutes) or ctx.
func awaitReady(ctx context.Context, ready <-chan error, done <-chan struct{}, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	select {
	case err := <-ready:
		return err
	case <-done:
		return errors.New("exited")
	case <-time.After(timeout):
		return fmt.Errorf("not ready after %s", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
