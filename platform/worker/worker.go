// Package worker supervises long-lived Python worker processes that import
// torch and triton once and then verify and time candidate kernels, speaking
// JSON lines (see PROTOCOL.md). Each worker runs in its own process group with
// a scrubbed environment, a private working directory and, where the OS
// allows, no network; it is killed as a group on timeout and restarted after
// any crash, CUDA error or tampering.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kagent-kernels/kagent/harness"
	"github.com/kagent-kernels/kagent/internal/proc"
	"github.com/kagent-kernels/kagent/platform"
)

// Options configure one worker process.
type Options struct {
	// Python is the interpreter (must import torch; triton on GPUs).
	Python string
	// HarnessDir holds the kagent_harness package. "" writes a private copy
	// into the worker's directory at every start (harness.Write): what an
	// earlier candidate may have changed on disk never reaches a new worker.
	HarnessDir string
	// Device is "cuda" or "cpu" (KAGENT_DEVICE in the worker).
	Device string
	// Env adds variables to the scrubbed environment (CUDA_VISIBLE_DEVICES=0, ...).
	Env []string
	// WorkDir is the worker's private working directory; "" makes a temporary one.
	WorkDir string
	// StartTimeout bounds start-up: imports plus the hello handshake.
	StartTimeout time.Duration
	// Isolate puts the worker in a new network namespace where permitted.
	Isolate bool
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
	// Command overrides the worker command line (tests use fake workers).
	Command []string
}

// Hello is the worker's handshake.
type Hello struct {
	PID              int     `json:"pid"`
	Python           string  `json:"python"`
	Torch            string  `json:"torch"`
	Triton           *string `json:"triton"`
	Interpret        bool    `json:"interpret"`
	CompileAvailable bool    `json:"compile_available"`
	Device           Device  `json:"device"`
	// Isolated is set by the supervisor: the worker has no network.
	Isolated bool `json:"-"`
	// Sandboxed is set by the supervisor: the worker's candidates run in the
	// OS sandbox (runners.go).
	Sandboxed bool `json:"-"`
}

// Isolation says, in a few words for reports, how the worker's candidates
// are kept from the judge and the machine.
func (h Hello) Isolation() string {
	if h.Sandboxed {
		return "each candidate in its own process, in the OS sandbox"
	}
	switch mode, _ := SandboxMode(); mode {
	case SandboxOff:
		return "each candidate in its own process, without the OS sandbox (KAGENT_SANDBOX=off)"
	case SandboxAuto:
		return "each candidate in its own process, without the OS sandbox: the machine cannot sandbox " +
			"(kagent doctor says why) and KAGENT_SANDBOX=auto allows that"
	}
	return "each candidate in its own process, without the OS sandbox"
}

// noSandboxHint is what a user can do when candidates cannot be sandboxed.
const noSandboxHint = "kagent doctor says more; to run candidates without it, by choice, set " + sandboxEnv + "=auto or off"

// Device describes the worker's device.
type Device struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Capability  string `json:"capability"`
	TotalMemory int64  `json:"total_memory"`
	L2Bytes     int64  `json:"l2_bytes"`
	SMCount     int    `json:"sm_count"`
}

// stderrTailSize is how much of the worker's stderr is kept for errors.
const stderrTailSize = 64 << 10

// Worker is one running Python worker. Calls are serialised.
type Worker struct {
	opts    Options
	log     *slog.Logger
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte // reply lines, closed at EOF
	readErr error       // why lines closed (set before close)
	done    chan struct{}
	waitErr error         // set before done is closed
	errEOF  chan struct{} // closed when stderr has been read to its end
	tail    *proc.Tail
	workDir string
	ownDir  bool
	fork    *forkServer // the server this worker was forked from, or nil
	// runnerConn is the worker's connection to its sandboxed runner server
	// (fd 3 in the worker; closed here once the worker has it), or nil.
	runnerConn *os.File

	mu     sync.Mutex // one call at a time
	nextID int
	closed bool
	hello  Hello
}

// Start launches a worker and waits for its handshake.
func Start(ctx context.Context, o Options) (*Worker, error) {
	return start(ctx, o, forkServersEnabled())
}

func start(ctx context.Context, o Options, fork bool) (*Worker, error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = 5 * time.Minute
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := &Worker{opts: o, log: log, lines: make(chan []byte, 1), done: make(chan struct{}), errEOF: make(chan struct{}), tail: proc.NewTail(stderrTailSize), nextID: 1}
	if o.WorkDir == "" {
		d, err := os.MkdirTemp("", "kagent-worker-")
		if err != nil {
			return nil, fmt.Errorf("start worker: %w", err)
		}
		w.workDir, w.ownDir = d, true
	} else {
		if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
			return nil, fmt.Errorf("start worker: %w", err)
		}
		w.workDir = o.WorkDir
	}
	// The worker's temporary files (Python's tempfile, torch.compile's
	// cache, the user test's copies, whatever a candidate writes) go to a
	// folder of its own that Close removes: nothing is left in $TMPDIR.
	if err := os.MkdirAll(filepath.Join(w.workDir, tmpDir), 0o700); err != nil {
		w.cleanup()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	// The worker's fork server and its runners' server import torch at the
	// same time (each only the first time its configuration is seen).
	type served struct {
		rs  *runnerServer
		err error
	}
	runners := make(chan served, 1)
	if len(o.Command) == 0 {
		go func() {
			rs, err := runnerServerFor(ctx, o)
			runners <- served{rs, err}
		}()
	}
	var fs *forkServer
	if fork && len(o.Command) == 0 && o.HarnessDir == "" {
		var err error
		if fs, err = forkServerFor(ctx, o, o.Isolate); err != nil {
			log.Debug("fork server unavailable; starting the worker on its own", "err", err)
		}
	}
	// runnersErr: the runners' server did not start and the user did not
	// allow candidates to run unsandboxed; reported after the worker's own
	// handshake, which names a broken interpreter more precisely.
	var runnersErr error
	if len(o.Command) == 0 {
		r := <-runners
		rs, err := r.rs, r.err
		if errors.Is(err, platform.ErrNoSandbox) {
			w.cleanup()
			return nil, fmt.Errorf("start worker: %w (%s)", err, noSandboxHint)
		}
		if err != nil {
			if mode, _ := SandboxMode(); mode == SandboxAuto {
				log.Warn("candidates run without the OS sandbox", "err", err)
			} else {
				runnersErr = err
			}
		}
		if rs != nil {
			if w.runnerConn, err = rs.connect(); err != nil {
				w.cleanup()
				return nil, fmt.Errorf("start worker: %w", err)
			}
		}
	}
	if fs != nil {
		w.fork = fs
	} else if o.HarnessDir == "" && len(o.Command) == 0 {
		d, err := os.MkdirTemp(w.workDir, "harness-")
		if err == nil {
			os.Remove(d)
			_, err = harness.Write(d)
		}
		if err != nil {
			w.cleanup()
			return nil, fmt.Errorf("start worker: %w", err)
		}
		w.opts.HarnessDir = d
	}
	sandboxed := w.runnerConn != nil
	isolated, err := w.launch(o.Isolate)
	if err != nil && o.Isolate {
		log.Warn("worker network isolation unavailable; starting without it", "err", err)
		isolated, err = w.launch(false)
	}
	if err != nil {
		w.cleanup()
		return nil, fmt.Errorf("start worker: %w", err)
	}
	w.hello.Isolated = isolated
	// The handshake is the reply to the implicit request 0.
	var h Hello
	hctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	if err := w.await(hctx, 0, &h); err != nil {
		w.Kill()
		var ee *ExitError
		if w.fork != nil && errors.As(err, &ee) && ee.Code == launchUnserved {
			// The fork server is gone or its socket was taken over: drop it
			// and start this worker on its own.
			log.Warn("fork server not answering; starting the worker on its own", "err", err)
			dropForkServer(w.fork)
			w.cleanup()
			return start(ctx, o, false)
		}
		w.cleanup()
		if strings.Contains(err.Error(), "No module named 'torch'") {
			return nil, fmt.Errorf("start worker: %s has no torch: point --python (or KAGENT_PYTHON) at a Python that has it (kagent doctor lists what it finds): %w", w.opts.Python, err)
		}
		return nil, fmt.Errorf("start worker: handshake: %w", err)
	}
	if runnersErr != nil {
		w.Kill()
		w.cleanup()
		return nil, fmt.Errorf("start worker: %w: the runners' server in it did not start: %v (%s)", platform.ErrNoSandbox, runnersErr, noSandboxHint)
	}
	h.Isolated = isolated
	h.Sandboxed = sandboxed
	w.hello = h
	log.Debug("worker ready", "pid", h.PID, "device", h.Device.Name, "torch", h.Torch, "isolated", isolated)
	return w, nil
}

func (w *Worker) launch(isolate bool) (bool, error) {
	argv := w.opts.Command
	switch {
	case len(argv) > 0:
	case w.fork != nil:
		var err error
		if argv, err = w.fork.launchArgv(w.opts.Python); err != nil {
			return false, err
		}
	default:
		argv = []string{w.opts.Python, "-u", "-m", "kagent_harness.worker"}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = w.workDir
	cmd.Env = scrubbedEnv(os.Environ(), w.workDir, w.opts)
	cmd.SysProcAttr = sysProcAttr(isolate)
	if w.runnerConn != nil {
		cmd.ExtraFiles = []*os.File{w.runnerConn}
		cmd.Env = append(cmd.Env, "KAGENT_RUNNER_FD=3")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return false, err
	}
	// Plain pipes, not StdoutPipe: the readers see EOF only when every holder
	// of the write end (the worker and anything it spawned) has closed it, and
	// Wait never races the readers.
	outR, outW, err := os.Pipe()
	if err != nil {
		return false, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return false, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		return false, err
	}
	outW.Close()
	errW.Close()
	if w.runnerConn != nil {
		w.runnerConn.Close()
		w.runnerConn = nil
	}
	w.cmd, w.stdin = cmd, stdin
	go w.readLines(outR)
	go func() {
		sink, closeSink := proc.StderrSink(w.tail, "worker")
		_, _ = io.Copy(sink, errR)
		closeSink()
		errR.Close()
		close(w.errEOF)
	}()
	go func() {
		err := cmd.Wait()
		w.waitErr = err
		close(w.done)
	}()
	return isolate, nil
}

// Hello returns the handshake.
func (w *Worker) Hello() Hello { return w.hello }

// PID returns the worker's process id.
func (w *Worker) PID() int {
	if w.cmd == nil || w.cmd.Process == nil {
		return 0
	}
	return w.cmd.Process.Pid
}

// StderrTail returns the last bytes the worker wrote to stderr.
func (w *Worker) StderrTail() string { return w.tail.String() }

// Alive reports whether the process is still running.
func (w *Worker) Alive() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

func (w *Worker) doneOrTimeout(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-w.done:
		case <-time.After(d):
		}
		close(ch)
	}()
	return ch
}

func (w *Worker) exitError() error {
	select {
	case <-w.done:
	default:
		if w.closed {
			return ErrClosed
		}
		return &ExitError{Err: errors.New("worker stopped answering"), Stderr: w.tail.String()}
	}
	// The process is gone but its last stderr lines may still be in the
	// pipe; a child that outlived it may hold the pipe open, so wait briefly.
	select {
	case <-w.errEOF:
	case <-time.After(2 * time.Second):
	}
	e := &ExitError{Stderr: w.tail.String(), Code: -1}
	if w.cmd.ProcessState != nil {
		e.Code = w.cmd.ProcessState.ExitCode()
		if ws, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	if w.closed {
		return ErrClosed
	}
	return e
}

// Kill stops the whole process group: SIGTERM, then SIGKILL after a grace
// period. It returns when the process has exited.
func (w *Worker) Kill() {
	if w.cmd == nil || w.cmd.Process == nil || !w.Alive() {
		return
	}
	pgid := w.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(3 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-w.done
	}
	// Children left in the group (a candidate's subprocesses) go too.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Close asks the worker to exit, kills it if it does not, and removes its
// private directory. It is idempotent.
func (w *Worker) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	if w.Alive() {
		if msg, err := encodeRequest(w.nextID, "shutdown", nil); err == nil {
			_, _ = w.stdin.Write(msg)
		}
		_ = w.stdin.Close()
		select {
		case <-w.done:
		case <-time.After(5 * time.Second):
		}
	}
	w.closed = true
	w.mu.Unlock()
	w.Kill()
	w.cleanup()
	return nil
}
