package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/export"
)

// parseExport parses export's flags as the CLI does, running nothing.
func parseExport(args ...string) (exportOptions, error) {
	var got exportOptions
	var perr error
	cmd := exportCommand()
	cmd.Action = func(c *cli.Context) error {
		got, perr = exportOptionsFrom(c)
		return nil
	}
	app := &cli.App{Name: "kagent", Commands: []*cli.Command{cmd}, Writer: io.Discard, ErrWriter: io.Discard,
		ExitErrHandler: func(*cli.Context, error) {}}
	if err := app.Run(append([]string{"kagent", "export"}, args...)); err != nil {
		return got, err
	}
	return got, perr
}

func TestExportFlags(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want exportOptions
		err  string // a substring of the usage error
	}{
		{name: "latest run", args: []string{"--out", "x"},
			want: exportOptions{KernelDir: ".", Out: "x", Formats: export.Formats}},
		{name: "a run, one format, force, json", args: []string{"-k", "kd", "--format", "hf", "--out", "x", "--force", "--json", "R1"},
			want: exportOptions{KernelDir: "kd", Run: "R1", Out: "x", Formats: []export.Format{export.FormatHF}, Force: true, JSON: true}},
		{name: "a file", args: []string{"--kernel", "k.py", "--problem", "p.py", "--format", "patch", "--out", "x"},
			want: exportOptions{KernelDir: ".", Kernel: "k.py", Problem: "p.py", Out: "x", Formats: []export.Format{export.FormatPatch}}},
		{name: "another history", args: []string{"--db", "h.db", "--out", "x", "--format", "kernelbench"},
			want: exportOptions{KernelDir: ".", DB: "h.db", Out: "x", Formats: []export.Format{export.FormatKernelBench}}},
		{name: "no --out", args: []string{}, err: "--out"},
		{name: "bad format", args: []string{"--out", "x", "--format", "onnx"}, err: `--format "onnx"`},
		{name: "kernel without problem", args: []string{"--out", "x", "--kernel", "k.py"}, err: "--kernel needs --problem"},
		{name: "problem without kernel", args: []string{"--out", "x", "--problem", "p.py"}, err: "--problem goes with --kernel"},
		{name: "kernel and run", args: []string{"--out", "x", "--kernel", "k.py", "--problem", "p.py", "R1"}, err: "not both"},
		{name: "two runs", args: []string{"--out", "x", "R1", "R2"}, err: "at most one RUN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseExport(c.args...)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || exitCode(err) != ExitUsage {
					t.Fatalf("error %v (exit %d), want a usage error with %q", err, exitCode(err), c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.KernelDir != c.want.KernelDir || got.DB != c.want.DB || got.Run != c.want.Run || got.Kernel != c.want.Kernel ||
				got.Problem != c.want.Problem || got.Out != c.want.Out || got.Force != c.want.Force || got.JSON != c.want.JSON ||
				!slices.Equal(got.Formats, c.want.Formats) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestExportRunOnCPU exports the best kernel of a real cpu-platform run of
// the rmsnorm example and runs what it wrote with the real Python: the hf
// tests pass, the patch module patches a model holding the problem's
// Model and matches it, the KernelBench ModelNew matches Model; a wrong
// kernel makes the patch fall back. Bad input is a one-line usage error.
func TestExportRunOnCPU(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	dir := tritonKernelDir(t, "rmsnorm")

	// Nothing ran yet: no promoted best.
	out := filepath.Join(t.TempDir(), "export")
	r := run(t, dir, "export", "--out", out)
	oneLineError(t, r, ExitUsage, "run history")

	r = run(t, dir, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--llm-replay", "transcript",
		"--llm-replay-match", "purpose", "--max-rounds", "1")
	if r.code != ExitOK {
		t.Fatalf("optimize: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, dir, "export", "--out", out, "--json")
	if r.code != ExitOK {
		t.Fatalf("export: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var m export.Manifest
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("export --json: %v\n%s", err, r.stdout)
	}
	if m.Run == nil || m.Run.Best == nil || m.Run.CandidateID == "input" || m.Speedup == nil || m.Speedup.VsInput <= 1 || m.Package != "rmsnorm" {
		t.Fatalf("manifest: %+v", m)
	}
	readme, _ := os.ReadFile(filepath.Join(out, "hf", "README.md"))
	for _, w := range []string{m.Run.ID, "Not representative", "CV", "x86", "over the input kernel", "kagent "} {
		if !strings.Contains(string(readme), w) {
			t.Errorf("README.md lacks %q:\n%s", w, readme)
		}
	}
	runExported(t, py, out, "match")

	// A non-empty --out is refused, and replaced with --force.
	r = run(t, dir, "export", "--out", out, "--format", "hf")
	oneLineError(t, r, ExitUsage, "not empty", "--force")
	if r = run(t, dir, "export", "--out", out, "--format", "hf", "--force"); r.code != ExitOK {
		t.Fatalf("export --force: exit %d\n%s", r.code, r.stderr)
	}

	// A wrong kernel: the patch's first call falls back on the original.
	best, err := os.ReadFile(filepath.Join(dir, "optimized_kernel_greedy.py"))
	if err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "wrong.py")
	src := string(best) + "\n\n_right = kernel_function\n\n\ndef kernel_function(*args):\n    return _right(*args) * 2\n"
	if err := os.WriteFile(wrong, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	wrongOut := filepath.Join(t.TempDir(), "wrong")
	if r = run(t, dir, "export", "--kernel", wrong, "--problem", "problem.py", "--out", wrongOut); r.code != ExitOK {
		t.Fatalf("export --kernel: exit %d\n%s", r.code, r.stderr)
	}
	runExported(t, py, wrongOut, "fallback")

	// A kernel without an entry point: one line, exit 2, nothing written.
	none := filepath.Join(t.TempDir(), "none.py")
	os.WriteFile(none, []byte("import triton\n"), 0o644)
	noneOut := filepath.Join(t.TempDir(), "none")
	r = run(t, dir, "export", "--kernel", none, "--problem", "problem.py", "--out", noneOut)
	oneLineError(t, r, ExitUsage, "kernel_function", "ModelNew")
	if _, err := os.Stat(noneOut); err == nil {
		t.Error("a failed export wrote --out")
	}
	// problem.py changed since the run: its kernel was verified against another.
	prob := filepath.Join(dir, "problem.py")
	orig, _ := os.ReadFile(prob)
	os.WriteFile(prob, append(slices.Clone(orig), "\n# changed\n"...), 0o644)
	oneLineError(t, run(t, dir, "export", "--out", noneOut), ExitUsage, "problem.py changed since run")
	os.WriteFile(prob, orig, 0o644)
	// A run id that does not exist.
	oneLineError(t, run(t, dir, "export", "--out", noneOut, "no-such-run"), ExitUsage, "no run no-such-run")
}

// runExported runs an export's hf tests and export/testdata/check_export.py.
func runExported(t *testing.T, py, out, mode string) {
	t.Helper()
	env := append(os.Environ(), "TRITON_INTERPRET=1", "PYTHONDONTWRITEBYTECODE=1")
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests")
	cmd.Dir, cmd.Env = filepath.Join(out, "hf"), env
	b, err := cmd.CombinedOutput()
	if (err == nil) != (mode == "match") {
		t.Errorf("hf tests (%s): %v\n%s", mode, err, b)
	}
	cmd = exec.Command(py, filepath.Join(repoRoot(t), "export", "testdata", "check_export.py"), out, "rmsnorm", mode)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("check_export.py %s: %v\n%s", mode, err, b)
	}
}
