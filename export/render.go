package export

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/internal/termtext"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

//go:embed templates
var templateFS embed.FS

var templates = template.Must(template.New("export").Funcs(template.FuncMap{
	"py":   pyString,
	"toml": pyString, // a JSON string is a TOML basic string
	"md":   mdText,
	"doc":  docText,
	"x":    ratio.String,
}).ParseFS(templateFS, "templates/*.tmpl", "templates/*/*.tmpl"))

// data is what the templates see.
type data struct {
	K              *Kernel
	Name           string // the kernel's name, one line
	Pkg            string // the Python package and op name
	HubName        string // the kernel-builder name (Pkg with '-')
	Camel          string // the layer class (ModelNew form)
	ModelNew       bool
	Version        string
	Now            time.Time
	ConfigJSON     string // the checks' settings (common.py.tmpl's KAGENT_CONFIG)
	ToleranceText  string
	Speedup        Speedups
	Representative bool
	Timings        []timingRow
	KernelFile     string // the kernel's origin, one line
}

type timingRow struct{ Label, Median, P20, P80, CV, N string }

// reserved are names the generated package's own names would clash with.
var reserved = map[string]bool{"torch": true, "json": true, "kernel": true, "ops": true, "typing": true, "tests": true, "triton": true}

func newData(k *Kernel, version string, now time.Time) *data {
	pkg := pyIdent(k.Name)
	if reserved[pkg] || isPyKeyword(pkg) {
		pkg += "_kernel"
	}
	d := &data{K: k, Name: oneLine(k.Name), Pkg: pkg, HubName: strings.ReplaceAll(pkg, "_", "-"), Camel: camel(pkg),
		ModelNew: k.Entry == kerneldir.EntryModelNew, Version: oneLine(version), Now: now, KernelFile: oneLine(k.Origin)}
	if k.Run == nil { // a file: its name, not where it lies on this machine
		d.KernelFile = oneLine(filepath.Base(k.Origin))
	}
	if d.Camel == "ModelNew" || d.Camel == "Model" {
		d.Camel += "Layer"
	}
	cfg := map[string]any{"name": k.Name, "entry": string(k.Entry), "dtype": k.Options.DType, "atol": k.Options.ATol,
		"rtol": k.Options.RTol, "tf32": k.Options.TF32, "shapes": k.Options.Shapes, "sizes": k.Options.Sizes}
	b, _ := json.Marshal(cfg) // YAML scalars, maps and lists: always encodable
	d.ConfigJSON = string(b)
	d.ToleranceText = toleranceText(k.Options)
	if r := k.Run; r != nil {
		d.Representative = r.Best != nil && r.Best.Representative
		if r.Best != nil && r.Best.MedianMS > 0 {
			over := func(t *platform.Timing) float64 {
				if t == nil || t.Unavailable != "" {
					return 0
				}
				return ratio.Of(t.MedianMS, r.Best.MedianMS)
			}
			d.Speedup = Speedups{VsInput: over(r.Input), VsEager: over(r.Eager), VsCompile: over(r.Compile)}
		}
		for _, t := range []struct {
			label string
			t     *platform.Timing
		}{{"this kernel (" + r.CandidateID + ")", r.Best}, {"input kernel", r.Input}, {"PyTorch eager", r.Eager}, {"torch.compile", r.Compile}} {
			if t.t == nil || t.t.Unavailable != "" {
				continue
			}
			d.Timings = append(d.Timings, timingRow{Label: mdText(t.label), Median: msText(t.t.MedianMS), P20: msText(t.t.P20MS),
				P80: msText(t.t.P80MS), CV: fmt.Sprintf("%.1f%%", 100*t.t.CV), N: fmt.Sprint(t.t.N)})
		}
	}
	return d
}

func toleranceText(o kerneldir.Options) string {
	switch {
	case o.ATol != nil && o.RTol != nil:
		return fmt.Sprintf("atol %g, rtol %g", *o.ATol, *o.RTol)
	case o.ATol != nil:
		return fmt.Sprintf("atol %g, rtol by dtype: 1e-4 for fp32, 1e-2 for fp16 and bf16", *o.ATol)
	case o.RTol != nil:
		return fmt.Sprintf("rtol %g, atol by dtype: 1e-4 for fp32, 1e-2 for fp16 and bf16", *o.RTol)
	}
	return "by dtype: 1e-4 for fp32, 1e-2 for fp16 and bf16"
}

func msText(ms float64) string {
	if ms >= 1 {
		return fmt.Sprintf("%.3f", ms)
	}
	return fmt.Sprintf("%.4f", ms)
}

func render(name string, d *data) (string, error) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, d); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return b.String(), nil
}

// renderAll renders each template into files under its name.
func renderAll(d *data, files map[string]string, pairs ...[2]string) error {
	for _, p := range pairs {
		s, err := render(p[0], d)
		if err != nil {
			return err
		}
		files[p[1]] = s
	}
	return nil
}

func hfFiles(d *data, files map[string]string) error {
	pkgDir := "hf/torch-ext/" + d.Pkg + "/"
	files[pkgDir+"kernel.py"] = d.K.Source
	files["hf/tests/__init__.py"] = ""
	files["hf/tests/reference_problem.py"] = d.K.ProblemSource
	return renderAll(d, files,
		[2]string{"build.toml.tmpl", "hf/build.toml"},
		[2]string{"flake.nix.tmpl", "hf/flake.nix"},
		[2]string{"README.md.tmpl", "hf/README.md"},
		[2]string{"init.py.tmpl", pkgDir + "__init__.py"},
		[2]string{"test.py.tmpl", "hf/tests/test_" + d.Pkg + ".py"})
}

func patchFiles(d *data, files map[string]string) error {
	files["patch/kagent_"+d.Pkg+"_kernel.py"] = d.K.Source
	files["patch/kagent_"+d.Pkg+"_reference.py"] = d.K.ProblemSource
	return renderAll(d, files, [2]string{"patch.py.tmpl", "patch/kagent_patch_" + d.Pkg + ".py"})
}

// kernelBenchFiles writes one file: the problem, the kernel, ModelNew. The
// sources are joined as values (never template text); their __future__
// imports move to the top, where Python requires them.
func kernelBenchFiles(d *data, files map[string]string) error {
	var parts []string
	for _, name := range []string{"kb_header", "kb_problem"} {
		s, err := render(name, d)
		if err != nil {
			return err
		}
		parts = append(parts, s)
	}
	prob, fut1 := splitFuture(d.K.ProblemSource)
	kern, fut2 := splitFuture(d.K.Source)
	parts = append(parts, prob)
	s, err := render("kb_kernel", d)
	if err != nil {
		return err
	}
	parts = append(parts, s, kern)
	if s, err = render("kb_footer", d); err != nil {
		return err
	}
	parts = append(parts, s)
	futures := dedupe(append(fut1, fut2...))
	head := parts[0]
	if len(futures) > 0 {
		head += strings.Join(futures, "\n") + "\n"
	}
	files["kernelbench/"+d.Pkg+".py"] = head + strings.Join(parts[1:], "")
	return nil
}

var futureLine = regexp.MustCompile(`(?m)^from\s+__future__\s+import\s+[^\n]*$`)

// splitFuture removes the top-level `from __future__ import` lines of src
// and returns them.
func splitFuture(src string) (string, []string) {
	found := futureLine.FindAllString(src, -1)
	return futureLine.ReplaceAllString(src, ""), found
}

func dedupe(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// pyString is s as a Python (and JSON, and TOML basic) string literal.
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mdText is untrusted text made safe on one Markdown line: control
// characters escaped, Markdown and HTML punctuation backslashed.
func mdText(s string) string {
	s = oneLine(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~&#", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// docText is one line of text safe inside a Python """docstring""".
func docText(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(oneLine(s))
}

func oneLine(s string) string { return strings.Join(strings.Fields(termtext.Line(s)), " ") }

func camel(pkg string) string {
	var b strings.Builder
	for _, part := range strings.Split(pkg, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

func isPyKeyword(s string) bool {
	switch s {
	case "and", "as", "assert", "async", "await", "class", "def", "del", "elif", "except", "finally", "from",
		"global", "in", "if", "for", "else", "return", "import", "break", "continue", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "try", "while", "with", "yield",
		"none", "true", "false":
		return true
	}
	return false
}
