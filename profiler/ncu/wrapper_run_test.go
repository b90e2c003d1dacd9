package ncu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The problem logs every reference forward and the candidate every call, to
// stderr, with the shape it got.
const runProblem = `
import sys
import torch

N = 64
D = 16

class Model(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(d))

    def forward(self, x):
        print("reference forward", tuple(x.shape), file=sys.stderr)
        return x * self.w

def get_inputs():
    return [torch.randn(N, D)]

def get_init_inputs():
    return [D]
`

const runCandidate = `
import sys
import torch

class ModelNew(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(d))

    def forward(self, x):
        print("candidate call", tuple(x.shape), "w", round(float(self.w.sum()), 4), file=sys.stderr)
        return x * self.w
`

// runShim stands in for the CUDA profiler and NVTX (a CPU torch has neither)
// and logs their calls, then runs the wrapper as ncu would.
const runShim = `
import runpy
import sys
import torch

def log(what):
    return lambda *a: print(what, *a, file=sys.stderr)

torch.cuda.nvtx.range_push = log("range push")
torch.cuda.nvtx.range_pop = log("range pop")
torch.cuda.profiler.start = log("profiler start")
torch.cuda.profiler.stop = log("profiler stop")
runpy.run_path(sys.argv[1], run_name="__main__")
`

// TestWrapperRunsTheHarness runs the rendered wrapper with a real Python and
// the repository's harness on the CPU: the candidate gets the reference's
// weights and the overridden shape, is warmed up outside the range, and is
// called once inside it; the reference never runs.
func TestWrapperRunsTheHarness(t *testing.T) {
	harness, py := repoHarness(t)
	dir := t.TempDir()
	files := map[string]string{"problem.py": runProblem, "cand.py": runCandidate, "shim.py": runShim}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := Wrapper{
		HarnessDir: harness, ProblemPath: filepath.Join(dir, "problem.py"), CandidatePath: filepath.Join(dir, "cand.py"),
		ShapeOverride: map[string]any{"N": 5}, Seeds: []int64{7, 8, 9}, Device: "cpu", Warmup: 2,
	}.Render()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "wrap.py")
	if err := os.WriteFile(wrapper, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join(dir, "shim.py"), wrapper)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KAGENT_DEVICE=cpu", "CUDA_VISIBLE_DEVICES=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wrapper failed: %v\n%s", err, out)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(line, "[W") { // torch's own warnings
			got = append(got, line)
		}
	}
	if n := len(got); n == 0 || !phasesLine.MatchString(got[n-1]) {
		t.Fatalf("wrapper printed\n%s\nwant its phases last", strings.Join(got, "\n"))
	} else {
		got = got[:n-1]
	}
	call := got[0]
	if !strings.HasPrefix(call, "candidate call (5, 16) w ") || strings.HasSuffix(call, " w 0.0") {
		t.Errorf("first line %q: want a call on the overridden shape with the reference's (nonzero) weights", call)
	}
	done := got[len(got)-1]
	if at := afterProgram(done, time.Now()); !strings.HasPrefix(done, "kagent: profiled call done at ") || at <= 0 {
		t.Errorf("last line %q: want the wall clock when the profiled call was done (read back: %s)", done, at)
	}
	want := []string{call, call, "range push " + RangeName, "profiler start", call, "profiler stop", "range pop", done}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("wrapper printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
