package prompts

import (
	"embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flosch/pongo2/v6"

	"github.com/kagent-kernels/kagent/roofline"
)

// Name names a template.
type Name string

// Templates.
const (
	System       Name = "system"
	Diagnose     Name = "diagnose"
	Optimize     Name = "optimize"
	Refine       Name = "refine"
	Reflect      Name = "reflect"
	Generate     Name = "generate"
	TritonRules  Name = "triton_rules"
	GuidanceCUDA Name = "guidance_cuda"
	GuidanceROCm Name = "guidance_rocm"
	GuidanceXPU  Name = "guidance_xpu"
	GuidanceCPU  Name = "guidance_cpu"
)

// Names lists every template, sorted.
func Names() []Name {
	n := []Name{System, Diagnose, Optimize, Refine, Reflect, Generate, TritonRules, GuidanceCUDA, GuidanceROCm, GuidanceXPU, GuidanceCPU}
	slices.Sort(n)
	return n
}

// kernelAgentNames maps KernelAgent's template names to kagent's.
var kernelAgentNames = map[string]Name{
	"kernel_optimization": Optimize,
	"reflexion_prompt":    Reflect,
	"reflexion":           Reflect,
	"triton_guidelines":   TritonRules,
	"kernel_generation":   Generate,
	"kernel_refinement":   Refine,
	"bottleneck":          Diagnose,
	"judger":              Diagnose,
}

// lookupName resolves a template name or alias.
func lookupName(s string) (Name, bool) {
	n := Name(s)
	if slices.Contains(Names(), n) {
		return n, true
	}
	n, ok := kernelAgentNames[s]
	return n, ok
}

//go:embed templates/*.tmpl
var embedded embed.FS

// Prompt is a rendered prompt: a system and a user message.
type Prompt struct {
	Name   Name
	System string
	User   string
}

// Options say where overriding templates come from.
type Options struct {
	// Dir holds files named like the templates (optimize.tmpl, optimize.j2
	// or optimize); any other .tmpl or .j2 file there is an error.
	Dir string
	// Files maps a template name (or KernelAgent alias) to a file; it wins
	// over Dir.
	Files map[string]string
}

// OptionsFromMap reads the `templates:` map of kagent's YAML: the key "dir"
// names a folder of overrides, every other key a template (or KernelAgent
// alias) and its file.
func OptionsFromMap(m map[string]string) Options {
	o := Options{Files: map[string]string{}}
	for k, v := range m {
		if k == "dir" {
			o.Dir = v
			continue
		}
		o.Files[k] = v
	}
	return o
}

// Set is a compiled set of templates. Safe for concurrent use.
type Set struct {
	tpl    map[Name]*pongo2.Template
	source map[Name]string
	origin map[Name]string // "embedded" or a file path
}

// Default returns the embedded templates. It panics if they do not compile,
// which the package's tests rule out.
func Default() *Set {
	s, err := New(Options{})
	if err != nil {
		panic(err)
	}
	return s
}

// New compiles the embedded templates with the overrides of opts.
func New(opts Options) (*Set, error) {
	s := &Set{tpl: map[Name]*pongo2.Template{}, source: map[Name]string{}, origin: map[Name]string{}}
	for _, n := range Names() {
		b, err := embedded.ReadFile("templates/" + string(n) + ".tmpl")
		if err != nil {
			return nil, fmt.Errorf("load prompt templates: %w", err)
		}
		s.source[n], s.origin[n] = string(b), "embedded"
	}
	overrides, err := overrideFiles(opts)
	if err != nil {
		return nil, fmt.Errorf("load prompt templates: %w", err)
	}
	for n, path := range overrides {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("load prompt template %s: %w", n, err)
		}
		s.source[n], s.origin[n] = string(b), path
	}
	// pongo2's own TrimBlocks/LStripBlocks are not used: they rewrite the
	// template's tokens on every execution, so each render trims one more
	// newline, and concurrent renders race. trimBlocks does it once, here.
	set := pongo2.NewSet("kagent-prompts", pongo2.NewFSLoader(embedded))
	var errs []error
	for n, src := range s.source {
		// Autoescape off, per template: pongo2's global switch is left alone.
		t, err := set.FromString("{% autoescape off %}" + trimBlocks(src) + "{% endautoescape %}")
		if err != nil {
			errs = append(errs, fmt.Errorf("compile prompt template %s (%s): %w", n, s.origin[n], err))
			continue
		}
		s.tpl[n] = t
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

var (
	reLStrip = regexp.MustCompile(`(?m)^[ \t]+(\{%)`)
	reTrim   = regexp.MustCompile(`%\}\r?\n`)
)

// trimBlocks applies Jinja's lstrip_blocks and trim_blocks to a template's
// source: whitespace before a {% tag that starts a line is removed, and so is
// the first newline after a %}. Variables' values are not touched: they are
// not part of the source.
func trimBlocks(src string) string {
	return reTrim.ReplaceAllString(reLStrip.ReplaceAllString(src, "$1"), "%}")
}

// overrideFiles resolves Options into template name -> file.
func overrideFiles(opts Options) (map[Name]string, error) {
	out := map[Name]string{}
	if opts.Dir != "" {
		entries, err := os.ReadDir(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("templates dir: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			ext := filepath.Ext(e.Name())
			base := strings.TrimSuffix(e.Name(), ext)
			if ext != ".tmpl" && ext != ".j2" && ext != "" {
				continue // READMEs and the like
			}
			n, ok := lookupName(base)
			if !ok {
				return nil, fmt.Errorf("templates dir %s: %s names no template (known: %s)", opts.Dir, e.Name(), knownNames())
			}
			out[n] = filepath.Join(opts.Dir, e.Name())
		}
	}
	for k, path := range opts.Files {
		n, ok := lookupName(k)
		if !ok {
			return nil, fmt.Errorf("templates: %q names no template (known: %s)", k, knownNames())
		}
		out[n] = path
	}
	return out, nil
}

func knownNames() string {
	var s []string
	for _, n := range Names() {
		s = append(s, string(n))
	}
	return strings.Join(s, ", ")
}

// Source returns a template's source and where it came from ("embedded" or a path).
func (s *Set) Source(n Name) (src, origin string, ok bool) {
	src, ok = s.source[n]
	return src, s.origin[n], ok
}

// Overridden lists the templates that do not come from the binary.
func (s *Set) Overridden() map[Name]string {
	out := map[Name]string{}
	for n, o := range maps.All(s.origin) {
		if o != "embedded" {
			out[n] = o
		}
	}
	return out
}

// render executes one template.
func (s *Set) render(n Name, ctx pongo2.Context) (string, error) {
	t, ok := s.tpl[n]
	if !ok {
		return "", fmt.Errorf("render prompt %s: no such template", n)
	}
	out, err := t.Execute(ctx)
	if err != nil {
		return "", fmt.Errorf("render prompt %s (%s): %w", n, s.origin[n], err)
	}
	return out, nil
}

// Guidance renders the platform guidance for t.Platform ("" for platforms
// without guidance, such as noop).
func (s *Set) Guidance(t Target) (string, error) {
	n := Name("guidance_" + strings.ToLower(t.Platform))
	if _, ok := s.tpl[n]; !ok {
		return "", nil
	}
	return s.render(n, s.base(t))
}

// Rules renders the Triton rules every prompt carries.
func (s *Set) Rules(t Target) (string, error) {
	return s.render(TritonRules, s.base(t))
}

// base is the context every template sees, without rules and guidance.
func (s *Set) base(t Target) pongo2.Context {
	entry := t.Entry
	if entry == "" {
		entry = EntryKernelFunction
	}
	return pongo2.Context{
		"platform":   t.Platform,
		"gpu":        gpuView(t.GPU),
		"entry":      entry,
		"allow_tf32": t.AllowTF32,
		"banned":     BannedOperations,
	}
}

// full renders rules and guidance into the base context and adds extra.
func (s *Set) full(t Target, problem string, extra pongo2.Context) (pongo2.Context, error) {
	ctx := s.base(t)
	rules, err := s.Rules(t)
	if err != nil {
		return nil, err
	}
	guidance, err := s.Guidance(t)
	if err != nil {
		return nil, err
	}
	ctx["rules"] = strings.TrimRight(rules, "\n")
	ctx["guidance"] = strings.TrimRight(guidance, "\n")
	ctx["problem"] = code(problem)
	maps.Copy(ctx, extra)
	return ctx, nil
}

// prompt renders the system message and the named user template.
func (s *Set) prompt(n Name, t Target, problem string, extra pongo2.Context) (Prompt, error) {
	ctx, err := s.full(t, problem, extra)
	if err != nil {
		return Prompt{}, err
	}
	ctx["purpose"] = string(n)
	sys, err := s.render(System, ctx)
	if err != nil {
		return Prompt{}, err
	}
	user, err := s.render(n, ctx)
	if err != nil {
		return Prompt{}, err
	}
	return Prompt{Name: n, System: sys, User: user}, nil
}

// Diagnose renders the bottleneck diagnosis prompt.
func (s *Set) Diagnose(d DiagnoseData) (Prompt, error) {
	m, causes, fixes := d.NumBottlenecks, d.NumCauses, d.NumFixes
	if m <= 0 {
		m = 1
	}
	if causes <= 0 {
		causes = 2
	}
	if fixes <= 0 {
		fixes = 1
	}
	return s.prompt(Diagnose, d.Target, d.Problem, pongo2.Context{
		"kernel": code(d.Kernel), "times": timesView(d.Times), "roofline": rooflineView(d.Roofline),
		"metrics": metricsView(d.Metrics), "num_bottlenecks": m, "num_causes": causes, "num_fixes": fixes,
		"explored": d.Explored, "schema": diagnosisSchema,
	})
}

// Optimize renders the rewrite prompt for one bottleneck direction.
func (s *Set) Optimize(d OptimizeData) (Prompt, error) {
	sp := d.TargetSpeedup
	if sp <= 1 {
		sp = 1.1
	}
	ref := d.Times.BestMS
	if ref == 0 {
		ref = d.Times.KernelMS
	}
	var avoid, try []string
	for _, r := range d.Reflections {
		avoid = appendNew(avoid, r.AvoidPatterns...)
		try = appendNew(try, r.TryPatterns...)
	}
	return s.prompt(Optimize, d.Target, d.Problem, pongo2.Context{
		"kernel": code(d.Kernel), "times": timesView(d.Times), "roofline": rooflineView(d.Roofline),
		"bottleneck": d.Bottleneck, "attempts": attemptsView(d.Attempts), "reflections": d.Reflections,
		"avoid": avoid, "prioritize": try, "target_speedup": num(sp), "target_ms": ms(ref / sp),
		"inspirations": inspirationsView(d.Inspirations),
	})
}

func inspirationsView(is []Inspiration) []map[string]any {
	out := make([]map[string]any, len(is))
	for i, x := range is {
		out[i] = map[string]any{"id": x.ID, "cell": x.Cell, "time_ms": ms(x.TimeMS), "kernel": code(x.Source)}
	}
	return out
}

// Refine renders the prompt that fixes a kernel which failed verification.
func (s *Set) Refine(d RefineData) (Prompt, error) {
	return s.prompt(Refine, d.Target, d.Problem, pongo2.Context{
		"kernel": code(d.Kernel), "failure": d.Failure, "reason": d.Reason, "details": code(d.Details),
		"attempt": d.Attempt, "max_attempts": d.MaxAttempts, "previous": d.Previous, "direction": d.Direction,
	})
}

// Reflect renders the reflexion prompt on one attempt.
func (s *Set) Reflect(d ReflectData) (Prompt, error) {
	change := ""
	if d.BeforeMS > 0 && d.AfterMS > 0 {
		change = strconv.FormatFloat((d.BeforeMS-d.AfterMS)/d.BeforeMS*100, 'f', 1, 64)
	}
	return s.prompt(Reflect, d.Target, "", pongo2.Context{
		"attempt": map[string]any{
			"round": d.Round, "bottleneck": d.Bottleneck, "before_ms": ms(d.BeforeMS), "after_ms": ms(d.AfterMS),
			"improvement_pct": change, "before": rooflineView(d.Before), "after": rooflineView(d.After),
			"passed": d.Passed, "failure": d.Failure, "reason": d.Reason,
		},
		"schema": reflectionSchema,
	})
}

// Generate renders the prompt that writes a first Triton kernel for a
// PyTorch problem.
func (s *Set) Generate(d GenerateData) (Prompt, error) {
	return s.prompt(Generate, d.Target, d.Problem, pongo2.Context{
		"dtype": d.DType, "feedback": d.Feedback, "previous_kernel": code(d.PreviousKernel),
	})
}

// code readies source for a fenced block: only trailing newlines are
// dropped (the template closes the fence on the next line); nothing else of
// it is changed.
func code(src string) string { return strings.TrimRight(src, "\n") }

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" && !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// num formats a float with 4 significant digits.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// ms formats milliseconds, "" when unknown.
func ms(v float64) string {
	if v <= 0 {
		return ""
	}
	return num(v)
}

type fact struct{ Label, Value string }

func gpuView(g roofline.Specs) map[string]any {
	var facts []fact
	add := func(label string, v float64, unit string) {
		if v > 0 {
			facts = append(facts, fact{label, num(v) + unit})
		}
	}
	units := "SMs"
	switch strings.ToLower(g.Vendor) {
	case "amd":
		units = "CUs"
	case "intel":
		units = "Xe-cores"
	}
	if g.Units > 0 {
		facts = append(facts, fact{"Compute units", strconv.Itoa(g.Units) + " " + units})
	}
	if g.WarpSize > 0 {
		facts = append(facts, fact{"Warp/wavefront size", strconv.Itoa(g.WarpSize)})
	}
	add("Peak memory bandwidth", g.MemBWGBs, " GB/s")
	add("Peak FP32", g.FP32TFLOPS, " TFLOPS")
	add("Peak TF32 (dense)", g.TF32TFLOPS, " TFLOPS")
	add("Peak FP16 (dense)", g.FP16TFLOPS, " TFLOPS")
	add("Peak BF16 (dense)", g.BF16TFLOPS, " TFLOPS")
	add("Peak FP8 (dense)", g.FP8TFLOPS, " TFLOPS")
	add("L2 cache", g.L2MB, " MB")
	add("Shared memory / LDS per unit", g.SmemKB, " KB")
	add("Memory", g.MemGB, " GB")
	return map[string]any{"name": g.Name, "arch": g.Arch, "target": g.Target, "facts": facts}
}

func timesView(t Timings) map[string]string {
	v := map[string]string{"kernel_ms": ms(t.KernelMS), "best_ms": ms(t.BestMS), "eager_ms": ms(t.EagerMS), "compile_ms": ms(t.CompileMS)}
	if t.KernelMS > 0 && t.EagerMS > 0 {
		v["vs_eager"] = num(t.EagerMS / t.KernelMS)
	}
	if t.KernelMS > 0 && t.CompileMS > 0 {
		v["vs_compile"] = num(t.CompileMS / t.KernelMS)
	}
	return v
}

// rooflineView is nil for a kernel the roofline did not place (no peak
// figures, as on the cpu platform, or nothing measured): the prompts then
// leave the roofline out rather than show 0% SOL.
func rooflineView(r roofline.Result) map[string]any {
	if !r.Placed() {
		return nil
	}
	return map[string]any{
		"class": string(r.Class), "compute_sol": num(r.ComputeSOL), "memory_sol": num(r.MemorySOL), "sol": num(r.SOL),
		"headroom": num(r.Headroom), "at_roofline": r.AtRoofline, "source": r.Source, "warnings": r.Warnings,
	}
}

func metricsView(ms []Metric) []fact {
	out := make([]fact, len(ms))
	for i, m := range ms {
		v := num(m.Value)
		if m.Unit != "" {
			v += " " + m.Unit
		}
		out[i] = fact{m.Name, v}
	}
	return out
}

func attemptsView(as []Attempt) []map[string]any {
	out := make([]map[string]any, len(as))
	for i, a := range as {
		out[i] = map[string]any{"round": a.Round, "direction": a.Direction, "time_ms": ms(a.TimeMS),
			"passed": a.Passed, "failure": a.Failure, "reason": a.Reason}
	}
	return out
}
