// Package worker supervises long-lived Python worker processes that import
// torch and triton once and then verify and time candidate kernels, speaking
// JSON lines (see PROTOCOL.md). Each worker runs in its own process group with
// a scrubbed environment, a private working directory and, where the OS
// allows, no network; it is killed as a group on timeout and restarted after
// any crash, CUDA error or tampering.
package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kagent-dev/kagent/harness"
	"github.com/kagent-dev/kagent/internal/proc"
	"github.com/kagent-dev/kagent/platform"
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

// reply is one line from the worker.
type reply struct {
	ID     int             `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *ReplyError     `json:"error"`
}

// maxLine bounds one reply line; a longer one is protocol corruption.
const maxLine = 64 << 20

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

// readLines forwards reply lines until EOF or a line over maxLine.
func (w *Worker) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<16)
	defer close(w.lines)
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			w.readErr = fmt.Errorf("%w: reply line over %d bytes", ErrProtocol, maxLine)
			_, _ = io.Copy(io.Discard, br)
			return
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(bytes.TrimSpace(buf)) > 0 {
				w.readErr = fmt.Errorf("%w: unterminated reply at exit", ErrProtocol)
			}
			return
		}
		line := bytes.TrimSpace(buf)
		buf = nil
		if len(line) == 0 {
			continue
		}
		w.lines <- append([]byte(nil), line...)
	}
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

// Call sends one request and decodes the result into out. timeout bounds the
// call (0 = only ctx). A timeout kills the worker (*TimeoutError); a worker
// that dies gives *ExitError; an error reply gives *ReplyError (with Fatal
// set when the worker is poisoned and exits).
func (w *Worker) Call(ctx context.Context, op string, req any, out any, timeout time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || !w.Alive() {
		return w.exitError()
	}
	id := w.nextID
	w.nextID++
	msg, err := encodeRequest(id, op, req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := w.stdin.Write(msg); err != nil {
		<-w.doneOrTimeout(2 * time.Second)
		return w.exitError()
	}
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err = w.await(cctx, id, out)
	var te *TimeoutError
	if errors.As(err, &te) {
		te.Op, te.After = op, timeout
	}
	return err
}

// await waits for the reply with the given id.
func (w *Worker) await(ctx context.Context, id int, out any) error {
	for {
		select {
		case line, ok := <-w.lines:
			if done, err := w.handle(line, ok, id, out); done {
				return err
			}
		case <-ctx.Done():
			w.Kill()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &TimeoutError{Stderr: w.tail.String()}
			}
			return ctx.Err()
		case <-w.done:
			// The process exited: read what it wrote before it went.
			grace := time.After(2 * time.Second)
			for {
				select {
				case line, ok := <-w.lines:
					if done, err := w.handle(line, ok, id, out); done {
						return err
					}
				case <-grace:
					return w.exitError()
				}
			}
		}
	}
}

// handle processes one reply line; done is false for a stale reply.
func (w *Worker) handle(line []byte, ok bool, id int, out any) (done bool, err error) {
	if !ok {
		<-w.doneOrTimeout(5 * time.Second)
		if w.readErr != nil {
			w.Kill()
			return true, &ExitError{Err: w.readErr, Stderr: w.tail.String(), Code: -1}
		}
		return true, w.exitError()
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		w.Kill()
		return true, &ExitError{Err: fmt.Errorf("%w: unparsable reply %.80q", ErrProtocol, line), Stderr: w.tail.String(), Code: -1}
	}
	if r.ID != id {
		w.log.Warn("dropping stale worker reply", "want", id, "got", r.ID)
		return false, nil
	}
	if !r.OK {
		if r.Error == nil {
			r.Error = &ReplyError{Kind: "protocol", Message: "error reply without error"}
		}
		if r.Error.Fatal {
			// The worker exits after a fatal reply; make sure it has before
			// the caller can hand it another request.
			<-w.doneOrTimeout(10 * time.Second)
			w.Kill()
		}
		return true, r.Error
	}
	if out != nil && len(r.Result) > 0 {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return true, fmt.Errorf("%w: result: %v", ErrProtocol, err)
		}
	}
	return true, nil
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

// tmpDir is the folder of the work dir that is the worker's TMPDIR.
const tmpDir = "tmp"

// cleanup removes the worker's own directory (or, in a work dir it was
// given, its temporary folder). Call it only once the process has exited.
func (w *Worker) cleanup() {
	switch {
	case w.workDir == "":
	case w.ownDir:
		removeAll(w.workDir)
	default:
		removeAll(filepath.Join(w.workDir, tmpDir))
	}
}

// removeAll removes dir even where code run by the worker took away the
// write or search permission of folders inside it.
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() || err != nil {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// encodeRequest merges id and op into the request's JSON object.
func encodeRequest(id int, op string, req any) ([]byte, error) {
	m := map[string]any{}
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("request must be a JSON object: %w", err)
		}
	}
	m["id"], m["op"] = id, op
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// envAllow lists the variables (or prefixes, ending in _) a worker inherits.
// Everything else — LLM keys, cloud credentials, tokens — stays behind.
var envAllow = []string{
	"PATH", "LANG", "LC_", "TZ", "TMPDIR", "TERM",
	"LD_LIBRARY_PATH", "CUDA_", "NVIDIA_", "HIP_", "ROCR_", "ROCM_", "HSA_", "AMD_",
	"ZE_", "ONEAPI_", "SYCL_", "TRITON_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_",
	"OMP_NUM_THREADS", "MKL_NUM_THREADS", "CONDA_PREFIX", "VIRTUAL_ENV", "PYTHONHOME",
	// The device memory the worker plans with (PROTOCOL.md, Memory).
	"KAGENT_MEMORY_LIMIT",
	// Device buffers shared with the runners (devbuf.py), opt-in.
	"KAGENT_DEVICE_BUFFERS",
}

// envDeny drops any variable whose name mentions a secret, even if allowed.
var envDeny = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "SESSION"}

// scrubbedEnv builds a worker's environment from the allowlist.
func scrubbedEnv(environ []string, workDir string, o Options) []string {
	var env []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !allowedEnv(name) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+workDir,
		"PYTHONPATH="+o.HarnessDir,
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
		"KAGENT_DEVICE="+o.Device,
		"TMPDIR="+filepath.Join(workDir, tmpDir),
	)
	return append(env, o.Env...)
}

func allowedEnv(name string) bool {
	upper := strings.ToUpper(name)
	for _, d := range envDeny {
		if strings.Contains(upper, d) {
			return false
		}
	}
	for _, a := range envAllow {
		if name == a || strings.HasSuffix(a, "_") && strings.HasPrefix(name, a) {
			return true
		}
	}
	return false
}
