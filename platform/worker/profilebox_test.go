package worker

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/proc/proctest"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/profiler/ncu"
)

// boxProblem runs on a CPU torch; the candidate's kernel is named axpy, as
// in the CSV sample the fake ncu reports.
const boxProblem = `
import torch

class Model(torch.nn.Module):
    def forward(self, x, y):
        return 2.0 * x + y

def get_inputs():
    return [torch.randn(64), torch.randn(64)]

def get_init_inputs():
    return []
`

// boxAttacks is the start of a verified kernel that, once imported by the
// profile's program, tries to end the run from there: it kills a process of
// kagent's user (a stand-in for kagent or a worker), overwrites a file of
// the run (with what it finds of an API key in its environment), and writes
// into the problem's folder. %d, %q, %q: the victim's pid, the run's file,
// the problem's folder.
const boxAttacks = `
import os
import signal

def _try(fn):
    try:
        fn()
    except Exception:
        pass

_try(lambda: os.kill(%d, signal.SIGKILL))
_try(lambda: open(%q, "w").write("forged " + os.environ.get("KAGENT_TEST_API_KEY", "")))
_try(lambda: open(%q + "/planted.py", "w").write("x = 1"))
`

// boxCandidate is boxAttacks in front of a kernel for a CPU torch.
const boxCandidate = boxAttacks + `
def jit(fn):
    return fn

@jit
def axpy(x, y):
    return 2.0 * x + y

def kernel_function(x, y):
    return axpy(x, y)
`

// boxShim stands in for the CUDA profiler and NVTX of a CPU torch.
const boxShim = `
import torch

def _noop(*args):
    pass

torch.cuda.nvtx.range_push = _noop
torch.cuda.nvtx.range_pop = _noop
torch.cuda.profiler.start = _noop
torch.cuda.profiler.stop = _noop
`

// TestProfileSandbox: a profile in the sandbox (ncu, here a fake that runs
// the wrapper, and the wrapper with the candidate) returns its metrics, and
// the candidate reaches neither kagent's processes nor the run's files nor
// the problem's folder; unsandboxed, the same candidate does all three.
func TestProfileSandbox(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if mode, _ := SandboxMode(); mode == SandboxOff || !probeSandbox().Available {
		t.Skip("this machine does not sandbox")
	}
	harnessDir, err := filepath.Abs(filepath.Join("..", "..", "harness"))
	if err != nil {
		t.Fatal(err)
	}
	fakeSrc, err := os.ReadFile(filepath.Join("..", "..", "profiler", "ncu", "testdata", "fake-ncu"))
	if err != nil {
		t.Fatal(err)
	}
	csv, err := filepath.Abs(filepath.Join("..", "..", "profiler", "ncu", "testdata", "raw_disable_extra_suffixes_via_log_file.csv"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KAGENT_TEST_API_KEY", "sk-secret")
	for _, tc := range []struct {
		name       string
		where      string // sandbox, outside (scrubbed environment), bare (kagent's own environment)
		ahead      bool
		staged     bool // handed over with Stage before the profile
		wantRecord string
	}{
		{name: "sandboxed", where: "sandbox", wantRecord: "the run's record"},
		{name: "sandboxed, started ahead", where: "sandbox", ahead: true, wantRecord: "the run's record"},
		{name: "sandboxed, staged", where: "sandbox", ahead: true, staged: true, wantRecord: "the run's record"},
		{name: "outside, scrubbed environment", where: "outside", wantRecord: "forged "},
		{name: "bare", where: "bare", wantRecord: "forged sk-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dirs := map[string]string{}
			for _, d := range []string{"tool", "shim", "problem", "run", "work"} {
				dirs[d] = filepath.Join(root, d)
				if err := os.Mkdir(dirs[d], 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tool := filepath.Join(dirs["tool"], "ncu")
			record := filepath.Join(dirs["run"], "record.txt")
			write(t, tool, string(fakeSrc), 0o755)
			write(t, filepath.Join(dirs["shim"], "sitecustomize.py"), boxShim, 0o644)
			write(t, filepath.Join(dirs["problem"], "problem.py"), boxProblem, 0o644)
			write(t, record, "the run's record", 0o644)
			victim := exec.Command("sleep", "600")
			if err := victim.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
			cand := filepath.Join(dirs["run"], "kernel.py")
			src := fmt.Sprintf(boxCandidate, victim.Process.Pid, record, dirs["problem"])
			write(t, cand, src, 0o644)

			env := []string{"FAKE_NCU_MODE=exec", "FAKE_NCU_CSV=" + csv, "KAGENT_DEVICE=cpu", "CUDA_VISIBLE_DEVICES=",
				"PYTHONPATH=" + dirs["shim"] + ":" + harnessDir}
			cfg := ncu.Config{
				NCUPath: tool, Python: py, HarnessDir: harnessDir, ProblemPath: filepath.Join(dirs["problem"], "problem.py"),
				DType: "fp32", Device: "cpu", WorkDir: dirs["work"], Metrics: []string{ncu.MetricTime},
				Ahead: tc.ahead, Timeout: 5 * time.Minute, Env: env,
			}
			var logs bytes.Buffer // the profiler warns where its process started ahead failed
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			switch tc.where {
			case "sandbox":
				iso, inside, err := ProfileSandbox(Options{Python: py, Device: "cpu"}, harnessDir,
					[]string{dirs["problem"], dirs["shim"], filepath.Dir(csv)})
				if err != nil || iso == nil {
					t.Fatalf("ProfileSandbox = %v, %v", iso != nil, err)
				}
				cfg.Isolate, cfg.Python = iso, inside
			case "outside":
				cfg.Isolate = ProfileOutside(Options{Device: "cpu"}, harnessDir)
			}
			p, err := ncu.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if tc.ahead {
				p.Prestart()
			}
			c := platform.Candidate{ID: "c1", Path: cand, Source: src}
			if tc.staged && !p.Stage(c) {
				t.Fatal("Stage refused")
			}
			m, err := p.Profile(context.Background(), c)
			if err != nil || m.TimeMS <= 0 {
				t.Fatalf("Profile = %+v, %v; want the fake ncu's metrics", m, err)
			}
			if logs.Len() > 0 {
				t.Errorf("the profiler warned:\n%s", logs.String())
			}
			alive := !proctest.Gone(victim.Process.Pid) // a killed child stays a zombie until reaped
			data, _ := os.ReadFile(record)
			_, planted := os.Stat(filepath.Join(dirs["problem"], "planted.py"))
			sandboxed := tc.where == "sandbox"
			if alive != sandboxed || string(data) != tc.wantRecord || os.IsNotExist(planted) != sandboxed {
				t.Errorf("victim alive %v, record %q, planted file %v; want alive and nothing planted = %v, record %q",
					alive, data, planted == nil, sandboxed, tc.wantRecord)
			}
			if left, _ := os.ReadDir(dirs["work"]); tc.where != "bare" && len(left) > 0 && !tc.ahead {
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				t.Errorf("the profile left %s in its work dir", strings.Join(names, ", "))
			}
		})
	}
}

func write(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// gpuBoxCandidate is boxAttacks in front of a Triton kernel.
const gpuBoxCandidate = boxAttacks + `
import torch
import triton
import triton.language as tl

@triton.jit
def axpy(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

def kernel_function(x, y):
    o = torch.empty_like(x)
    n = x.numel()
    axpy[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)
    return o
`

const gpuBoxProblem = `
import torch

class Model(torch.nn.Module):
    def forward(self, x, y):
        return 2.0 * x + y

def get_inputs():
    return [torch.randn(1 << 24), torch.randn(1 << 24)]

def get_init_inputs():
    return []
`

// TestProfileSandboxGPU runs the real ncu in the sandbox on an NVIDIA GPU:
// the probe, then profiles of a Triton kernel whose module attacks the run
// (fresh, started ahead, and staged), against one outside the sandbox. It logs what
// each took.
func TestProfileSandboxGPU(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if _, err := os.Stat("/dev/nvidiactl"); err != nil {
		t.Skip("no NVIDIA GPU")
	}
	tool, err := (&ncu.Runner{NCU: os.Getenv("KAGENT_NCU")}).Binary()
	if err != nil {
		t.Skipf("no ncu: %v", err)
	}
	if !probeSandbox().Available {
		t.Skip("this machine does not sandbox")
	}
	harnessDir, err := filepath.Abs(filepath.Join("..", "..", "harness"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	problemDir, runDir := filepath.Join(root, "problem"), filepath.Join(root, "run")
	for _, d := range []string{problemDir, runDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(problemDir, "problem.py"), gpuBoxProblem, 0o644)
	iso, inside, err := ProfileSandbox(Options{Python: py, Device: "cuda"}, harnessDir, append([]string{problemDir}, ncu.InstallDirs(tool)...))
	t.Logf("ncu %s, its installation: %v", tool, ncu.InstallDirs(tool))
	if err != nil || iso == nil {
		t.Fatalf("ProfileSandbox = %v, %v", iso != nil, err)
	}
	probe := func(isolate ncu.Isolator, python string) (time.Duration, error) {
		start := time.Now()
		err := ncu.Probe(context.Background(), &ncu.Runner{NCU: tool, Timeout: 3 * time.Minute, Isolate: isolate},
			"", python, "cuda", t.TempDir())
		return time.Since(start), err
	}
	took, err := probe(iso, inside)
	t.Logf("probe in the sandbox: %v in %s", err, took.Round(time.Millisecond))
	if err != nil {
		took, outside := probe(nil, py)
		t.Fatalf("ncu cannot profile in the sandbox: %v (outside it: %v, in %s)", err, outside, took.Round(time.Millisecond))
	}
	for _, tc := range []struct {
		name      string
		sandboxed bool
		ahead     bool
		staged    bool // staged 15 s before the profile, as alongside a run's acceptance gate
	}{{"sandboxed", true, false, false}, {"sandboxed, started ahead", true, true, false},
		{"sandboxed, staged", true, true, true}, {"unsandboxed", false, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			record := filepath.Join(runDir, "record.txt")
			write(t, record, "the run's record", 0o644)
			os.Remove(filepath.Join(problemDir, "planted.py"))
			victim := exec.Command("sleep", "600")
			if err := victim.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
			src := fmt.Sprintf(gpuBoxCandidate, victim.Process.Pid, record, problemDir)
			cand := filepath.Join(runDir, "kernel.py")
			write(t, cand, src, 0o644)
			var logs bytes.Buffer // the profiler's line on where the profile's time went
			cfg := ncu.Config{NCUPath: tool, Python: py, HarnessDir: harnessDir, ProblemPath: filepath.Join(problemDir, "problem.py"),
				DType: "fp32", WorkDir: t.TempDir(), Ahead: tc.ahead, Timeout: 5 * time.Minute,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			defer func() { t.Logf("profiler log:\n%s", logs.String()) }()
			if tc.sandboxed {
				cfg.Isolate, cfg.Python = iso, inside
			}
			p, err := ncu.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c := platform.Candidate{ID: "box", Path: cand, Source: src}
			if tc.ahead {
				p.Prestart()
				if tc.staged && !p.Stage(c) {
					t.Fatal("Stage refused")
				}
				time.Sleep(15 * time.Second) // its imports (and the staged warm-up), as while a round runs
			}
			start := time.Now()
			m, err := p.Profile(context.Background(), c)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("profiled in %s: kernels %v, %.4f ms, %.3g bytes read", took.Round(time.Millisecond), m.Kernels, m.TimeMS, m.BytesRead)
			if len(m.Kernels) != 1 || m.Kernels[0] != "axpy" || m.TimeMS <= 0 {
				t.Errorf("metrics %+v: want axpy's", m)
			}
			alive := !proctest.Gone(victim.Process.Pid) // a killed child stays a zombie until reaped
			data, _ := os.ReadFile(record)
			_, planted := os.Stat(filepath.Join(problemDir, "planted.py"))
			untouched := alive && string(data) == "the run's record" && os.IsNotExist(planted)
			if untouched != tc.sandboxed {
				t.Errorf("victim alive %v, record %q, planted file %v; want untouched = %v", alive, data, planted == nil, tc.sandboxed)
			}
		})
	}
}
