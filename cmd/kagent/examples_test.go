package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/internal/pythontest"
)

// tritonKernelDir copies an example into a fresh folder (runs write into
// the kernel dir) and sets the cpu platform to require Triton kernels. It
// skips without a Python that has torch and triton, unless
// KAGENT_REQUIRE_TRITON=1 (make test, CI) makes that a failure.
func tritonKernelDir(t *testing.T, example string) string {
	t.Helper()
	pythontest.Triton(t)
	t.Setenv("KAGENT_PLATFORM_KWARGS", "triton=require")
	return exampleCopy(t, example)
}

// exampleCopy copies examples/NAME into a temporary dir, without what a run
// in the checkout itself left there (.kagent, optimized_kernel_*.py), so
// tests start from the example as shipped.
func exampleCopy(t *testing.T, example string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "examples", example)
	dir := filepath.Join(t.TempDir(), example)
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch {
		case e.IsDir() && (e.Name() == ".kagent" || e.Name() == "__pycache__"):
			return filepath.SkipDir
		case e.IsDir():
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		case strings.HasPrefix(e.Name(), "optimized_kernel_") || !e.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// quickStart returns the kagent command lines of README.md's quick start
// (its sh blocks), each as its arguments after ./bin/kagent: continued
// lines joined, comments dropped.
func quickStart(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Quick start")
	if !ok {
		t.Fatal("README.md has no Quick start section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var cmds [][]string
	var line string
	inBlock := false
	for _, l := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inBlock = !inBlock
			continue
		case !inBlock:
			continue
		}
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if cont := strings.HasSuffix(l, "\\"); cont {
			line += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		line += l
		if f := strings.Fields(line); len(f) > 1 && f[0] == "./bin/kagent" {
			cmds = append(cmds, f[1:])
		}
		line = ""
	}
	return cmds
}

// TestQuickStartOnCPU runs the README's quick start demo, its command as
// the README writes it, through the binary in a copy of the examples: the
// rmsnorm example on the cpu platform (its "cpu" size, real Triton kernels
// through the interpreter) with its recorded LLM transcript, no API key,
// ends with a verified improvement, an accepted best kernel, a report and
// plots.
func TestQuickStartOnCPU(t *testing.T) {
	var demo []string
	for _, c := range quickStart(t) {
		if c[0] == "optimize" && slices.Contains(c, "--llm-replay") {
			demo = c
		}
	}
	if demo == nil || !slices.Contains(demo, "--platform") {
		t.Fatalf("README's quick start has no optimize --platform cpu --llm-replay demo: %q", quickStart(t))
	}
	dir := tritonKernelDir(t, "rmsnorm")
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "examples", "rmsnorm"), os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	r := runEnv(t, root, []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"}, demo...)
	if r.code != ExitOK {
		t.Fatalf("%q: exit %d, want %d (a verified improvement)\n%s\n%s", demo, r.code, ExitOK, r.stdout, r.stderr)
	}
	_, report, _ := strings.Cut(r.stdout, "\nreport: ")
	report, _, _ = strings.Cut(report, "\n")
	out := filepath.Dir(report)
	if !strings.HasPrefix(out, filepath.Join(root, "examples", "rmsnorm", ".kagent", "runs")) {
		t.Fatalf("the run dir %q is not under the example's .kagent/runs:\n%s", out, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(root, "examples", "rmsnorm", "optimized_kernel_greedy.py")); err != nil {
		t.Errorf("the demo wrote no optimized_kernel_greedy.py: %v", err)
	}
	for _, w := range []string{"acceptance gate: passed", "x input", "report: "} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
	for _, f := range []string{"report.md", "report.json", "roofline.svg", "time_per_round.svg", "best_kernel.py"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("run dir lacks %s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Platform string `json:"platform"`
		Size     string `json:"size"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Platform != "cpu" || !strings.HasPrefix(rep.Size, "cpu (") {
		t.Errorf("report.json: platform %q size %q, want cpu and the cpu size", rep.Platform, rep.Size)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "timed size") {
		t.Errorf("report.md does not state the timed size")
	}
	best, _ := os.ReadFile(filepath.Join(out, "best_kernel.py"))
	if !strings.Contains(string(best), "@triton.jit") || !strings.Contains(string(best), "_rmsnorm_one_pass") {
		t.Errorf("best kernel is not the transcript's single-pass Triton kernel:\n%s", best)
	}
}

// TestEvalExampleOnCPU: kagent eval verifies and times an example's Triton
// kernel on the cpu platform, stating the size it timed.
func TestEvalExampleOnCPU(t *testing.T) {
	dir := tritonKernelDir(t, "swiglu")
	r := run(t, dir, "eval", "--kernel-dir", ".", "--platform", "cpu")
	if r.code != ExitOK {
		t.Fatalf("eval: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"verify:   PASSED", "triton_launch ok", "size:     cpu (", "eager", "compile", "not representative",
		"isolation: each candidate in its own process"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("eval output lacks %q:\n%s", w, r.stdout)
		}
	}
	// An unknown size is a usage error naming the sizes there are.
	r = run(t, dir, "eval", "--kernel-dir", ".", "--platform", "cpu", "--size", "huge")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `size "huge"`) || !strings.Contains(r.stderr, "cpu") {
		t.Errorf("--size huge: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestTuneExampleOnCPU: --strategy tune (no LLM) finds a faster launch
// configuration of the matvec example's Triton kernel on the cpu platform.
// The tune strategy's settings with 4 knob variants instead of 8 (each
// variant costs seconds under the interpreter; the first four include one
// twice as fast as the input).
func TestTuneExampleOnCPU(t *testing.T) {
	dir := tritonKernelDir(t, "matvec")
	out := filepath.Join(t.TempDir(), "run")
	tune, err := os.ReadFile(filepath.Join(repoRoot(t), "configs", "strategies", "tune.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(tune), "strategy_config:\n", "strategy_config:\n  max_variants: 4\n", 1)
	if cfg == string(tune) {
		t.Fatal("configs/strategies/tune.yaml has no strategy_config block")
	}
	cfgPath := filepath.Join(t.TempDir(), "tune4.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfgPath, "--max-rounds", "1", "--out", out)
	if r.code != ExitOK {
		t.Fatalf("tune: exit %d, want %d\n%s\n%s", r.code, ExitOK, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "acceptance gate: passed") {
		t.Errorf("output lacks the acceptance gate:\n%s", r.stdout)
	}
}

// TestDoctorCPUPlatform: doctor says whether the cpu platform can run Triton
// kernels: ok with a working interpreter, an error naming the failure when
// triton is importable but its interpreter cannot run a kernel.
func TestDoctorCPUPlatform(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	tritonKernelDir(t, "swiglu") // skips or fails without triton
	r := run(t, t.TempDir(), "doctor", "--python", py)
	if !strings.Contains(r.stdout, "cpu platform") || !strings.Contains(r.stdout, "Triton kernels run on CPU tensors") {
		t.Errorf("doctor with triton:\n%s", r.stdout)
	}
	// A triton that imports but cannot run a kernel (a stand-in package).
	fake := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fake, "triton"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "triton", "__init__.py"), []byte("__version__ = '0.0-broken'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", fake)
	r = run(t, t.TempDir(), "doctor", "--python", py)
	var line string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "cpu platform") {
			line = l
		}
	}
	if !strings.Contains(line, "error") || !strings.Contains(line, "interpreter failed") || !strings.Contains(line, "triton.language") {
		t.Errorf("doctor with a broken triton: %q\n%s", line, r.stdout)
	}
}
