package prompts

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kagent-kernels/kagent/roofline"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// kernel is kernel code full of characters templates and HTML escaping would
// mangle: <, >, &&, {{ }}, {% %}, quotes.
const kernel = `import triton
import triton.language as tl

@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    # {{ not a template }} and {% neither %} nor {# this #}
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = (offs < n_cols) & (offs >= 0)
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    ok = n_cols > 0 and BLOCK >= n_cols  # "quotes" & 'apostrophes' && <tags>
    rms = tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + offs, x / rms * tl.load(w_ptr + offs, mask=mask), mask=mask)

def kernel_function(x, w, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
`

const problem = `import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

batch_size, dim = 4096, 8192  # if dim < 1 && batch_size > 0: {{ x }}

def get_inputs():
    return [torch.randn(batch_size, dim, device="cuda", dtype=torch.bfloat16)]

def get_init_inputs():
    return [dim]
`

var h200 = roofline.Specs{Name: "NVIDIA H200", Vendor: "nvidia", Arch: "Hopper", Target: "9.0", Units: 132, WarpSize: 32,
	FP32TFLOPS: 67, TF32TFLOPS: 494.7, FP16TFLOPS: 989.4, BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9,
	MemBWGBs: 4800, MemGB: 141, L2MB: 50, SmemKB: 228}

var mi300x = roofline.Specs{Name: "AMD Instinct MI300X", Vendor: "amd", Arch: "CDNA3", Target: "gfx942", Units: 304, WarpSize: 64,
	FP32TFLOPS: 163.4, FP16TFLOPS: 1307.4, BF16TFLOPS: 1307.4, MemBWGBs: 5300, MemGB: 192, L2MB: 4, SmemKB: 64}

var cudaTarget = Target{Platform: "cuda", GPU: h200, Entry: EntryKernelFunction}

var before = roofline.Result{ComputeSOL: 12.5, MemorySOL: 41.25, SOL: 41.25, Class: roofline.ClassLatency, Headroom: 58.75,
	Source: "ncu", Warnings: []string{"only 32 programs for 132 SMs"}}

var memBottleneck = Bottleneck{Rank: 1, Category: "memory", Summary: "each row is read twice and loads are not vectorized",
	Reasoning: "dram throughput is 41% of peak while the SMs idle",
	RootCauses: []RootCause{{Cause: "two passes over x", Evidence: []Evidence{{Metric: "dram__bytes_read.sum", Value: "268.4M",
		Interpretation: "twice the input size"}}}},
	Fixes: []Fix{{Fix: "keep the row in registers between the sum and the scale", Rationale: "halves DRAM reads"}}}

// cases render every template from fixed data.
var cases = map[string]func(*Set) (Prompt, error){
	"diagnose": func(s *Set) (Prompt, error) {
		return s.Diagnose(DiagnoseData{Target: cudaTarget, Problem: problem, Kernel: kernel,
			Times: Timings{KernelMS: 0.4213, EagerMS: 0.9876, CompileMS: 0.5123}, Roofline: before,
			Metrics: MetricsFromRaw(map[string]float64{"dram__throughput.avg.pct_of_peak_sustained_elapsed": 41.25,
				"sm__warps_active.avg.pct_of_peak_sustained_active": 23.5, "launch__registers_per_thread": 40}),
			NumBottlenecks: 2, Explored: []string{"latency: grid too small"}})
	},
	"optimize": func(s *Set) (Prompt, error) {
		return s.Optimize(OptimizeData{Target: cudaTarget, Problem: problem, Kernel: kernel,
			Times: Timings{KernelMS: 0.4213, BestMS: 0.4, EagerMS: 0.9876, CompileMS: 0.5123}, Roofline: before,
			Bottleneck: memBottleneck,
			Attempts: []Attempt{{Round: 1, Direction: "latency: grid too small", TimeMS: 0.45, Passed: true},
				{Round: 2, Direction: "memory: vectorize", Failure: "correctness", Reason: "max abs err 3e-2 at output 0"}},
			Reflections: []Reflection{{AvoidPatterns: []string{"BLOCK=16384 spills"}, TryPatterns: []string{"two rows per program"}},
				{AvoidPatterns: []string{"BLOCK=16384 spills"}}}})
	},
	"refine": func(s *Set) (Prompt, error) {
		return s.Refine(RefineData{Target: cudaTarget, Problem: problem, Kernel: kernel, Failure: "correctness",
			Reason: "max abs err 3e-2 at output 0", Details: "output 0: 17 of 33554432 elements differ\n",
			Attempt: 1, MaxAttempts: 3, Previous: []string{"static: calls torch.sum"}, Direction: memBottleneck.Direction()})
	},
	"reflect": func(s *Set) (Prompt, error) {
		after := before
		after.MemorySOL, after.Class = 78, roofline.ClassMemory
		return s.Reflect(ReflectData{Target: cudaTarget, Round: 2, Bottleneck: memBottleneck, BeforeMS: 0.4213, AfterMS: 0.2511,
			Before: before, After: after, Passed: true})
	},
	"generate": func(s *Set) (Prompt, error) {
		return s.Generate(GenerateData{Target: cudaTarget, Problem: problem, DType: "bf16"})
	},
	"generate_rocm_modelnew": func(s *Set) (Prompt, error) {
		return s.Generate(GenerateData{Target: Target{Platform: "rocm", GPU: mi300x, Entry: EntryModelNew}, Problem: problem,
			Feedback: "static: calls torch.nn.functional.rms_norm", PreviousKernel: kernel})
	},
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./prompts -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from %s (-want +got):\n%s", name, path, diff)
	}
}

func TestGolden(t *testing.T) {
	s := Default()
	for name, render := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := render(s)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name, "=== system ===\n"+p.System+"=== user ===\n"+p.User)
		})
	}
	for _, tg := range []Target{
		{Platform: "cuda", GPU: h200}, {Platform: "rocm", GPU: mi300x},
		{Platform: "xpu", GPU: roofline.Specs{Name: "Intel Data Center GPU Max 1550", Arch: "Xe-HPC"}}, {Platform: "cpu"},
	} {
		t.Run("guidance_"+tg.Platform, func(t *testing.T) {
			g, err := s.Guidance(tg)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "guidance_"+tg.Platform, g)
		})
	}
	t.Run("triton_rules", func(t *testing.T) {
		r, err := s.Rules(Target{Entry: EntryModelNew, AllowTF32: true})
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "triton_rules", r)
	})
}

// Every template that shows code shows it byte for byte.
func TestCodeSurvivesRendering(t *testing.T) {
	s := Default()
	for name, render := range cases {
		p, err := render(s)
		if err != nil {
			t.Fatal(err)
		}
		if name == "reflect" {
			continue // shows no code
		}
		// Byte for byte, up to the trailing newline the fence replaces.
		if !strings.Contains(p.User, "```python\n"+problem+"```") {
			t.Errorf("%s: problem source not rendered byte for byte", name)
		}
		if name != "generate" && !strings.Contains(p.User, "```python\n"+kernel+"```") {
			t.Errorf("%s: kernel source not rendered byte for byte", name)
		}
		for _, bad := range []string{"&lt;", "&amp;", "&gt;", "&#39;", "&quot;"} {
			if strings.Contains(p.User, bad) || strings.Contains(p.System, bad) {
				t.Errorf("%s: HTML-escaped %s in output", name, bad)
			}
		}
	}
}

func TestEveryPromptCarriesRules(t *testing.T) {
	s := Default()
	for _, name := range []string{"optimize", "refine", "generate"} {
		p, _ := cases[name](s)
		for _, want := range []string{"## Triton rules", "Accumulate in fp32", "other", "whole reduction", "stride",
			"torch.nn.functional", "torch.ops.aten", "streams", "caching outputs", "sys.argv", "monkeypatching", "## NVIDIA CUDA guidance"} {
			if !strings.Contains(p.User, want) {
				t.Errorf("%s prompt lacks %q", name, want)
			}
		}
	}
	rocm, _ := cases["generate_rocm_modelnew"](s)
	for _, want := range []string{"wavefront is 64", "tl.math.tanh and tl.libdevice are not available", "multiples of 64",
		"XCD swizzle", "TRITON_HIP_USE_BLOCK_PINGPONG", "class ModelNew(torch.nn.Module)"} {
		if !strings.Contains(rocm.User, want) {
			t.Errorf("rocm prompt lacks %q", want)
		}
	}
}

func TestDiagnosePromptAsksForMDistinct(t *testing.T) {
	p, err := Default().Diagnose(DiagnoseData{Target: cudaTarget, Kernel: kernel, NumBottlenecks: 3, NumCauses: 1, NumFixes: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 most important bottlenecks", "exactly 3 entries", "memory:", "compute:", "latency:",
		`"root_causes"`, `"evidence"`, "1 root cause with", "2 fixes", "must not name the same limit"} {
		if !strings.Contains(p.User, want) {
			t.Errorf("diagnose prompt lacks %q", want)
		}
	}
}

func TestOverrides(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("optimize.tmpl", "MINE {{ bottleneck.Summary }}\n{{ kernel }}")
	write("kernel_refinement.j2", "REFINE {{ failure }}: {{ reason }}")
	write("README.md", "not a template")
	other := filepath.Join(t.TempDir(), "sys.txt")
	os.WriteFile(other, []byte("SYSTEM for {{ platform }}"), 0o644)

	s, err := New(OptionsFromMap(map[string]string{"dir": dir, "system": other}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Optimize(OptimizeData{Target: cudaTarget, Kernel: kernel, Bottleneck: memBottleneck})
	if err != nil {
		t.Fatal(err)
	}
	if p.User != "MINE "+memBottleneck.Summary+"\n"+strings.TrimRight(kernel, "\n") || p.System != "SYSTEM for cuda" {
		t.Errorf("override not used:\n%q\n%q", p.System, p.User)
	}
	r, _ := s.Refine(RefineData{Failure: "correctness", Reason: "a < b && c"})
	if r.User != "REFINE correctness: a < b && c" {
		t.Errorf("KernelAgent alias not used or escaped: %q", r.User)
	}
	if got := s.Overridden(); len(got) != 3 {
		t.Errorf("overridden = %v", got)
	}
	if _, origin, _ := s.Source(Diagnose); origin != "embedded" {
		t.Errorf("diagnose origin %q", origin)
	}

	write("optimise.tmpl", "typo")
	if _, err := New(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "optimise.tmpl names no template") {
		t.Errorf("typo in dir: err = %v", err)
	}
	if _, err := New(Options{Files: map[string]string{"nope": other}}); err == nil || !strings.Contains(err.Error(), "known:") {
		t.Errorf("unknown name: err = %v", err)
	}
	bad := write("bad.j2", "{% for x in %}")
	if _, err := New(Options{Files: map[string]string{"reflect": bad}}); err == nil || !strings.Contains(err.Error(), "compile prompt template reflect") {
		t.Errorf("bad template: err = %v", err)
	}
}

func TestConcurrentRendering(t *testing.T) {
	s := Default()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name, render := range cases {
				if _, err := render(s); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestDiagnosisNormalize(t *testing.T) {
	d := Diagnosis{Bottlenecks: []Bottleneck{
		{Rank: 2, Category: "Compute-Bound", Summary: "fp32 division in the inner loop"},
		{Rank: 1, Category: "memory", Summary: "uncoalesced loads"},
		{Rank: 3, Category: "memory", Summary: "Uncoalesced  loads"}, // a repeat
		{Rank: 4, Category: "underutilized", Summary: "only 32 programs"},
		{Rank: 5, Category: "memory", Summary: ""},
	}}.Normalize(0)
	var got []string
	for _, b := range d.Bottlenecks {
		got = append(got, b.Direction())
	}
	want := []string{"memory: uncoalesced loads", "compute: fp32 division in the inner loop", "latency: only 32 programs"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("normalize (-want +got):\n%s", diff)
	}
	if err := d.Validate(); err != nil {
		t.Error(err)
	}
	if n := len(d.Normalize(2).Bottlenecks); n != 2 {
		t.Errorf("Normalize(2) kept %d", n)
	}
	if err := (Diagnosis{Bottlenecks: []Bottleneck{{Category: "vibes", Summary: "x"}}}).Normalize(0).Validate(); err == nil {
		t.Error("unknown category accepted")
	}
	if err := (Diagnosis{}).Validate(); err == nil {
		t.Error("empty diagnosis accepted")
	}
}

func TestValueDecodesNumbersAndStrings(t *testing.T) {
	var ev []Evidence
	if err := jsonUnmarshal(`[{"metric":"a","value":41.25},{"metric":"b","value":"3.2 GB/s"},{"metric":"c","value":null}]`, &ev); err != nil {
		t.Fatal(err)
	}
	if ev[0].Value != "41.25" || ev[1].Value != "3.2 GB/s" || ev[2].Value != "" {
		t.Errorf("values = %+v", ev)
	}
}

func TestOptimizeShowsInspirations(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		insp  []Inspiration
		wants []string
	}{
		{"none", nil, nil},
		{"two", []Inspiration{{ID: "r1c2", Cell: "memory/block<=128/warps?", TimeMS: 0.5, Source: "def other_kernel():\n    pass\n"},
			{ID: "input", Source: "def third():\n    pass\n"}},
			[]string{"## Other correct kernels for ideas", "### r1c2 (memory/block<=128/warps?), 0.5 ms", "def other_kernel():", "### input", "def third():"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Optimize(OptimizeData{Target: cudaTarget, Problem: problem, Kernel: kernel, Bottleneck: memBottleneck, Inspirations: tt.insp})
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.wants) == 0 && strings.Contains(p.User, "Other correct kernels") {
				t.Errorf("a slot without inspirations shows the section:\n%s", p.User)
			}
			for _, w := range tt.wants {
				if !strings.Contains(p.User, w) {
					t.Errorf("prompt lacks %q:\n%s", w, p.User)
				}
			}
		})
	}
}
