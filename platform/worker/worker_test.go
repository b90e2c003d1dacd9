package worker

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/harness"
)

func python(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KAGENT_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

func fakeOptions(t *testing.T, env ...string) Options {
	script, err := filepath.Abs("testdata/fakeworker.py")
	if err != nil {
		t.Fatal(err)
	}
	return Options{Command: []string{python(t), "-u", script}, Device: "cpu", Env: env, StartTimeout: 30 * time.Second, Isolate: true}
}

func startFake(t *testing.T, env ...string) *Worker {
	t.Helper()
	w, err := Start(context.Background(), fakeOptions(t, env...))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestCallAndClose(t *testing.T) {
	w := startFake(t)
	if w.Hello().Torch != "fake" || w.Hello().PID == 0 {
		t.Fatalf("hello = %+v", w.Hello())
	}
	var out map[string]any
	if err := w.Call(context.Background(), "echo", map[string]any{"x": "a<b&&c"}, &out, hangGuard); err != nil {
		t.Fatal(err)
	}
	if out["x"] != "a<b&&c" || out["op"] != "echo" {
		t.Fatalf("echo = %v", out)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if w.Alive() {
		t.Fatal("worker alive after Close")
	}
	if err := w.Call(context.Background(), "echo", nil, nil, time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Call after Close = %v", err)
	}
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	w := startFake(t)
	err := w.Call(context.Background(), "sleep", map[string]any{"seconds": 3600, "child": true}, nil, 2*time.Second)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Op != "sleep" {
		t.Fatalf("err = %v, want TimeoutError", err)
	}
	if w.Alive() {
		t.Fatal("worker alive after timeout")
	}
	// The child it spawned is gone too: the group is empty.
	deadline := time.Now().Add(hangGuard)
	for syscall.Kill(-w.PID(), 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("process group still has members after the kill")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hangGuard bounds a wait that should end at once; it only keeps a broken
// build from hanging, so it is long enough for the busiest CI machine.
const hangGuard = time.Minute

func TestCancelStopsCall(t *testing.T) {
	w := startFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	if err := w.Call(ctx, "sleep", map[string]any{"seconds": 3600}, nil, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCrashes(t *testing.T) {
	t.Run("exit code", func(t *testing.T) {
		w := startFake(t)
		err := w.Call(context.Background(), "exit", map[string]any{"code": 3}, nil, hangGuard)
		var xe *ExitError
		if !errors.As(err, &xe) || xe.Code != 3 || !strings.Contains(xe.Stderr, "exiting with 3") {
			t.Fatalf("err = %#v", err)
		}
		if !strings.Contains(err.Error(), "exiting with 3") {
			t.Errorf("message lacks the stderr tail: %v", err)
		}
	})
	t.Run("segfault", func(t *testing.T) {
		w := startFake(t)
		err := w.Call(context.Background(), "segv", nil, nil, hangGuard)
		var xe *ExitError
		if !errors.As(err, &xe) || xe.Signal == "" {
			t.Fatalf("err = %#v, want a signal", err)
		}
	})
	t.Run("fatal reply", func(t *testing.T) {
		w := startFake(t)
		err := w.Call(context.Background(), "fatal", nil, nil, hangGuard)
		var re *ReplyError
		if !errors.As(err, &re) || !re.Fatal || re.Kind != "cuda_error" {
			t.Fatalf("err = %v", err)
		}
		deadline := time.Now().Add(hangGuard)
		for w.Alive() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if w.Alive() {
			t.Fatal("worker alive after a fatal reply")
		}
	})
	t.Run("non-fatal reply", func(t *testing.T) {
		w := startFake(t)
		err := w.Call(context.Background(), "fail", nil, nil, hangGuard)
		var re *ReplyError
		if !errors.As(err, &re) || re.Fatal || !w.Alive() {
			t.Fatalf("err = %v alive=%v", err, w.Alive())
		}
	})
}

func TestProtocolCorruption(t *testing.T) {
	w := startFake(t)
	err := w.Call(context.Background(), "garbage", nil, nil, hangGuard)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrProtocol", err)
	}
	if w.Alive() {
		t.Fatal("a worker that corrupted the protocol must be killed")
	}
	w2 := startFake(t)
	var out map[string]any
	if err := w2.Call(context.Background(), "stale", nil, &out, hangGuard); err != nil || out["fresh"] != true {
		t.Fatalf("stale reply not skipped: %v %v", out, err)
	}
}

func TestStderrFloodIsBounded(t *testing.T) {
	w := startFake(t)
	if err := w.Call(context.Background(), "spam", map[string]any{"bytes": 8 << 20}, nil, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := len(w.StderrTail()); n > stderrTailSize {
		t.Fatalf("stderr tail holds %d bytes", n)
	}
}

func TestStartFailures(t *testing.T) {
	for _, mode := range []string{"silent", "garbage", "die"} {
		t.Run(mode, func(t *testing.T) {
			o := fakeOptions(t, "FAKE_START="+mode)
			o.StartTimeout = 2 * time.Second
			if _, err := Start(context.Background(), o); err == nil {
				t.Fatal("Start succeeded")
			}
		})
	}
	o := fakeOptions(t)
	o.Command = []string{"/no/such/python"}
	if _, err := Start(context.Background(), o); err == nil {
		t.Fatal("Start of a missing interpreter succeeded")
	}
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY": "sk-test-openai", "ANTHROPIC_API_KEY": "sk-ant-test", "AWS_SECRET_ACCESS_KEY": "aws-secret",
		"GITHUB_TOKEN": "ghp_test", "CUDA_AUTH_TOKEN": "cuda-token", "MY_PASSWORD": "hunter2",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "3")
	w := startFake(t, "EXTRA=1")
	var out struct {
		Env map[string]string `json:"env"`
		Cwd string            `json:"cwd"`
	}
	if err := w.Call(context.Background(), "env", nil, &out, hangGuard); err != nil {
		t.Fatal(err)
	}
	for k, v := range out.Env {
		for _, s := range secrets {
			if strings.Contains(v, s) {
				t.Errorf("secret reached the worker in %s", k)
			}
		}
	}
	if out.Env["CUDA_VISIBLE_DEVICES"] != "3" || out.Env["EXTRA"] != "1" || out.Env["KAGENT_DEVICE"] != "cpu" {
		t.Errorf("expected variables missing: %v", out.Env)
	}
	if out.Env["HOME"] != out.Cwd || out.Cwd == "" {
		t.Errorf("HOME %q is not the private working dir %q", out.Env["HOME"], out.Cwd)
	}
}

func TestNetworkIsolation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	w := startFake(t)
	if !w.Hello().Isolated {
		t.Skip("this machine does not allow a new network namespace")
	}
	var out struct {
		Connected bool `json:"connected"`
	}
	if err := w.Call(context.Background(), "net", map[string]any{"port": ln.Addr().(*net.TCPAddr).Port}, &out, hangGuard); err != nil {
		t.Fatal(err)
	}
	if out.Connected {
		t.Fatal("an isolated worker reached a listener on the host")
	}
}

func TestPoolReplacesDeadWorkers(t *testing.T) {
	p, err := NewPool(context.Background(), []Options{fakeOptions(t)}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first := l.PID()
	_ = l.Call(context.Background(), "exit", map[string]any{"code": 1}, nil, hangGuard)
	l.Release()
	l, err = p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if l.PID() == first || !l.Alive() {
		t.Fatalf("dead worker not replaced (pid %d -> %d)", first, l.PID())
	}
	if p.Restarts(0) != 1 {
		t.Errorf("restarts = %d, want 1", p.Restarts(0))
	}
	var out map[string]any
	if err := l.Call(context.Background(), "echo", nil, &out, hangGuard); err != nil {
		t.Fatalf("replacement does not serve: %v", err)
	}
}

// TestPrivateHarness: a worker without a HarnessDir runs its own fresh copy
// of the harness, so a copy changed on disk by an earlier candidate is never
// imported by a later worker; the copy goes with the worker.
func TestPrivateHarness(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	start := func() *Worker {
		w, err := Start(context.Background(), Options{Python: py, Device: "cpu", Env: []string{"CUDA_VISIBLE_DEVICES=", "KAGENT_TEST=private-harness"}})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// What a candidate could do to the harness files it can reach.
	tamper := func(dir string) {
		files, err := filepath.Glob(filepath.Join(dir, harness.Package, "*.py"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no harness files under %s: %v", dir, err)
		}
		for _, f := range files {
			if err := os.WriteFile(f, []byte("raise SystemExit('tampered')\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("own process", func(t *testing.T) {
		t.Setenv(forkServerEnv, "0")
		a := start()
		dirA := a.opts.HarnessDir
		if !strings.HasPrefix(dirA, a.workDir+string(os.PathSeparator)) {
			t.Fatalf("harness %q is not in the worker's directory %q", dirA, a.workDir)
		}
		tamper(dirA)
		b := start() // would fail its start-up if it imported a's copy
		defer b.Close()
		if b.opts.HarnessDir == dirA {
			t.Fatal("two workers share a harness copy")
		}
		a.Close()
		if _, err := os.Stat(dirA); !os.IsNotExist(err) {
			t.Errorf("a's harness copy outlived it: %v", err)
		}
	})
	t.Run("fork server", func(t *testing.T) {
		a := start()
		defer a.Close()
		if a.fork == nil {
			t.Fatal("the worker was not forked from a fork server")
		}
		// Every file of the server's copy, launch.py included: the server
		// imported them before any worker existed and the launcher runs
		// from the binary.
		tamper(filepath.Join(a.fork.dir, "h"))
		b := start()
		defer b.Close()
		if b.fork != a.fork {
			t.Fatal("the second worker did not come from the same fork server")
		}
		if b.Hello().PID == a.Hello().PID {
			t.Fatal("two workers share a process")
		}
		// A socket put in the server's place is refused; the worker starts
		// on its own instead.
		if err := os.Remove(a.fork.socket); err != nil {
			t.Fatal(err)
		}
		impostor, err := net.Listen("unix", a.fork.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer impostor.Close()
		got := make(chan int, 1)
		go func() {
			c, err := impostor.Accept()
			if err != nil {
				got <- -1
				return
			}
			n, _ := io.Copy(io.Discard, c)
			got <- int(n)
		}()
		c := start()
		defer c.Close()
		if c.fork != nil {
			t.Fatal("a worker was started through an impostor socket")
		}
		if n := <-got; n != 0 {
			t.Fatalf("the launcher sent %d bytes to the impostor", n)
		}
	})
}

// TestStartWithoutTorch: a Python without torch gives an error that says
// what to change.
func TestStartWithoutTorch(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	// -S leaves out site-packages, where torch is installed.
	noTorch := filepath.Join(t.TempDir(), "python-without-torch")
	if err := os.WriteFile(noTorch, []byte("#!/bin/sh\nexec "+py+" -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Python: noTorch, Device: "cpu"})
	if err == nil || !strings.Contains(err.Error(), "has no torch: point --python (or KAGENT_PYTHON)") {
		t.Fatalf("err = %v", err)
	}
}
