package export

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/pythontest"
	"github.com/kagent-kernels/kagent/kerneldir"
)

var fixedNow = func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }

func TestFindEntry(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      kerneldir.Entry
		err       bool
	}{
		{"kernel_function", "import triton\n\ndef kernel_function(x):\n    return x\n", kerneldir.EntryKernelFunction, false},
		{"ModelNew", "class ModelNew(nn.Module):\n    pass\n", kerneldir.EntryModelNew, false},
		{"both: ModelNew wins", "def kernel_function(x):\n    pass\nclass ModelNew:\n    pass\n", kerneldir.EntryModelNew, false},
		{"nested only", "class A:\n    def kernel_function(self):\n        pass\n", "", true},
		{"in a string only", "s = 'def kernel_function'\n", "", true},
		{"none", "import torch\n", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := FindEntry(c.src)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("FindEntry: %q, %v; want %q (error %v)", got, err, c.want, c.err)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Format
		err  bool
	}{
		{"all", Formats, false},
		{"hf", []Format{FormatHF}, false},
		{"patch", []Format{FormatPatch}, false},
		{"kernelbench", []Format{FormatKernelBench}, false},
		{"onnx", nil, true},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseFormat(c.in)
			if (err != nil) != c.err || strings.Join(fmtStrings(got), ",") != strings.Join(fmtStrings(c.want), ",") {
				t.Fatalf("ParseFormat(%q) = %v, %v", c.in, got, err)
			}
		})
	}
}

func fmtStrings(fs []Format) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f))
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestExamples exports every shipped example's input kernel (no run) and
// checks the files; for some it runs the generated Python under Triton's
// interpreter: the hf tests, the patch module and the KernelBench ModelNew.
func TestExamples(t *testing.T) {
	root := repoRoot(t)
	ents, err := os.ReadDir(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	// layernorm: ModelNew; swiglu: bf16 with its own rtol;
	// fused_residual_rmsnorm: a Model that keeps an __init__ argument under
	// another name (the patch's init_args).
	runPython := map[string]bool{"layernorm": true, "swiglu": true, "fused_residual_rmsnorm": true}
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		n++
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, "examples", name)
			k, err := FromFiles(filepath.Join(dir, "input.py"), filepath.Join(dir, "problem.py"))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			m, err := Write(context.Background(), k, Options{Out: out, Version: "test", Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			checkTree(t, out, k, m)
			if runPython[name] {
				py := pythontest.Triton(t)
				runGenerated(t, py, out, m.Package, "match")
			}
		})
	}
	if n < 6 {
		t.Errorf("found %d examples, want the 6 shipped ones", n)
	}
}

// checkTree checks what every export holds: the manifest's files, the
// sources verbatim, the names.
func checkTree(t *testing.T, out string, k *Kernel, m *Manifest) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk Manifest
	if err := json.Unmarshal(b, &onDisk); err != nil {
		t.Fatalf("export.json: %v", err)
	}
	if onDisk.KernelSHA256 != kerneldir.Sum([]byte(k.Source)) || onDisk.Entry != string(k.Entry) || len(onDisk.Files) != len(m.Files) {
		t.Errorf("export.json: %+v", onDisk)
	}
	var walked []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			walked = append(walked, filepath.ToSlash(rel))
		}
		return nil
	})
	if strings.Join(walked, "\n") != strings.Join(m.Files, "\n") {
		t.Errorf("files on disk:\n%s\nmanifest:\n%s", strings.Join(walked, "\n"), strings.Join(m.Files, "\n"))
	}
	pkg := m.Package
	verbatim := map[string]string{
		"hf/torch-ext/" + pkg + "/kernel.py":    k.Source,
		"hf/tests/reference_problem.py":         k.ProblemSource,
		"patch/kagent_" + pkg + "_kernel.py":    k.Source,
		"patch/kagent_" + pkg + "_reference.py": k.ProblemSource,
	}
	for name, want := range verbatim {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || string(got) != want {
			t.Errorf("%s is not the source verbatim (%v)", name, err)
		}
	}
	kb, err := os.ReadFile(filepath.Join(out, "kernelbench", pkg+".py"))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := splitFuture(k.Source)
	if !strings.Contains(string(kb), src) || !strings.Contains(string(kb), "class ModelNew") && k.Entry == kerneldir.EntryKernelFunction {
		t.Errorf("kernelbench/%s.py lacks the kernel source or ModelNew", pkg)
	}
	toml, _ := os.ReadFile(filepath.Join(out, "hf", "build.toml"))
	for _, w := range []string{"[general]", `name = "` + strings.ReplaceAll(pkg, "_", "-") + `"`, "backends = [", "[torch-noarch]"} {
		if !strings.Contains(string(toml), w) {
			t.Errorf("build.toml lacks %q:\n%s", w, toml)
		}
	}
}

// runGenerated runs an export's hf tests and the patch/KernelBench check
// (testdata/check_export.py) with mode match or fallback.
func runGenerated(t *testing.T, py, out, pkg, mode string) {
	t.Helper()
	env := append(os.Environ(), "TRITON_INTERPRET=1", "PYTHONDONTWRITEBYTECODE=1")
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests")
	cmd.Dir, cmd.Env = filepath.Join(out, "hf"), env
	b, err := cmd.CombinedOutput()
	if hfOK := err == nil; hfOK != (mode == "match") {
		t.Errorf("hf tests (mode %s): %v\n%s", mode, err, b)
	}
	check, err := filepath.Abs(filepath.Join(repoRoot(t), "export", "testdata", "check_export.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(py, check, out, pkg, mode)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("check_export.py %s: %v\n%s", mode, err, b)
	}
}

// oddText is kernel source text that would break a template that parsed
// it, or a Python string that held it.
const oddText = `

# Odd text kagent export must carry as it is: {{ .Name }} {{template "common" .}} }}{{
_ODD = """triple "quoted" ''' \n {{.K}} ünïcödé ☃ 𝔘 </script> ` + "`back`" + `"""
_ODD2 = '\'' + "\"" + r'\x00{{'
`

// TestOddSource: a kernel whose source holds quotes, triple quotes,
// template delimiters and unicode is exported byte for byte, and what is
// generated from it still runs.
func TestOddSource(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "examples", "rmsnorm")
	k, err := FromFiles(filepath.Join(dir, "input.py"), filepath.Join(dir, "problem.py"))
	if err != nil {
		t.Fatal(err)
	}
	k.Source = "from __future__ import annotations\n" + k.Source + oddText
	k.Name = `rms"norm {{x}} """ \`
	out := filepath.Join(t.TempDir(), "out")
	m, err := Write(context.Background(), k, Options{Out: out, Version: `v1 "q" {{.}} """\`, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if m.Package != "rms_norm_x" {
		t.Errorf("package %q, want rms_norm_x", m.Package)
	}
	checkTree(t, out, k, m)
	kb, _ := os.ReadFile(filepath.Join(out, "kernelbench", m.Package+".py"))
	if !regexp.MustCompile(`^"""[^\n]*\n(.*\n)*?"""\nfrom __future__ import annotations\n`).Match(kb) {
		t.Errorf("the __future__ import is not right after the docstring:\n%.400s", kb)
	}
	py := pythontest.Triton(t)
	runGenerated(t, py, out, m.Package, "match")
}

// TestRefuseNonEmpty: a non-empty --out is refused unless Force, and then
// replaced whole.
func TestRefuseNonEmpty(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "examples", "matvec")
	k, err := FromFiles(filepath.Join(dir, "input.py"), filepath.Join(dir, "problem.py"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), k, Options{Out: out, Formats: []Format{FormatPatch}}); err != nil {
		t.Fatalf("an empty --out: %v", err)
	}
	_, err = Write(context.Background(), k, Options{Out: out, Formats: []Format{FormatHF}})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a non-empty --out: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "hf")); err == nil {
		t.Error("the refused export wrote hf/")
	}
	if _, err := Write(context.Background(), k, Options{Out: out, Formats: []Format{FormatHF}, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "patch")); err == nil {
		t.Error("--force kept the old export's patch/")
	}
	leftovers(t, filepath.Dir(out), "out")
}

// TestNoHalfWrittenOut: an export that fails leaves no output and no
// temporary folder.
func TestNoHalfWrittenOut(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "examples", "swiglu")
	k, err := FromFiles(filepath.Join(dir, "input.py"), filepath.Join(dir, "problem.py"))
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	// hf renders, then an unknown format fails.
	if _, err := Write(context.Background(), k, Options{Out: out, Formats: []Format{FormatHF, "onnx"}}); err == nil {
		t.Fatal("an unknown format did not fail")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, k, Options{Out: out}); err == nil {
		t.Fatal("a cancelled export did not fail")
	}
	// The last step fails, after every file was written.
	rename = func(string, string) error { return errors.New("disk gone") }
	_, err = Write(context.Background(), k, Options{Out: out})
	rename = os.Rename
	if err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("a failed rename: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed export left --out")
	}
	// A file at --out is refused.
	if err := os.WriteFile(out, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(context.Background(), k, Options{Out: out}); err == nil {
		t.Fatal("a file at --out did not fail")
	}
	if b, _ := os.ReadFile(out); string(b) != "x" {
		t.Error("the file at --out changed")
	}
	os.Remove(out)
	leftovers(t, parent, "")
}

// leftovers fails on anything in dir but keep.
func leftovers(t *testing.T, dir, keep string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != keep {
			t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// TestDefaultTolerancesMatchTheHarness: the generated checks' default
// tolerances are the harness's (harness/kagent_harness/numerics.py).
func TestDefaultTolerancesMatchTheHarness(t *testing.T) {
	pat := regexp.MustCompile(`(?m)^\s+torch\.(float32|float16|bfloat16): ([0-9.e-]+),`)
	table := func(path string) map[string]string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, s := range pat.FindAllStringSubmatch(string(b), -1) {
			m[s[1]] = s[2]
		}
		return m
	}
	harness := table(filepath.Join(repoRoot(t), "harness", "kagent_harness", "numerics.py"))
	ours := table(filepath.Join("templates", "common.py.tmpl"))
	if len(ours) != 3 {
		t.Fatalf("common.py.tmpl: %v", ours)
	}
	for k, v := range ours {
		if harness[k] != v {
			t.Errorf("tolerance of %s: %s here, %s in the harness", k, v, harness[k])
		}
	}
}
