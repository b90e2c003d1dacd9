package prompts

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kagent-kernels/kagent/roofline"
)

// Entry points a kernel file may define (mirrors kerneldir.Entry).
const (
	EntryModelNew       = "ModelNew"
	EntryKernelFunction = "kernel_function"
)

// Target says what the kernel runs on and how it is called. Every data struct
// embeds it.
type Target struct {
	// Platform is the registry name: cuda, rocm, xpu, cpu, noop.
	Platform string
	// GPU holds the device's facts from the specs database (zero: unknown).
	GPU roofline.Specs
	// Entry is EntryModelNew or EntryKernelFunction (default).
	Entry string
	// AllowTF32 says the task permits TF32 in fp32 matmuls.
	AllowTF32 bool
}

// NewTarget is what a run's prompts are written for: targetPlatform (the
// config's target_platform) where set, else the platform the run uses, and
// cuda for a platform that runs nothing (a dry run's noop); the entry point
// is ModelNew where entry says so, else kernel_function; tf32 is the task's
// option (allow or forbid).
func NewTarget(targetPlatform, platform string, executes bool, gpu roofline.Specs, entry, tf32 string) Target {
	t := Target{Platform: targetPlatform, GPU: gpu, Entry: EntryKernelFunction, AllowTF32: tf32 == "allow"}
	switch {
	case t.Platform != "":
	case executes && platform != "":
		t.Platform = platform
	default:
		t.Platform = "cuda"
	}
	if entry == EntryModelNew {
		t.Entry = EntryModelNew
	}
	return t
}

// Timings are measured times in milliseconds; 0 means not measured.
type Timings struct {
	KernelMS  float64 // the kernel the prompt is about
	BestMS    float64 // the fastest correct kernel so far
	EagerMS   float64 // PyTorch eager
	CompileMS float64 // torch.compile
}

// Metric is one profiler metric.
type Metric struct {
	Name  string
	Value float64
	Unit  string
}

// MetricsFromRaw turns a profiler's raw metrics into a list sorted by name.
func MetricsFromRaw(raw map[string]float64) []Metric {
	out := make([]Metric, 0, len(raw))
	for k, v := range raw {
		out = append(out, Metric{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Metric) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// DiagnoseData feeds the diagnose template.
type DiagnoseData struct {
	Target
	Problem  string
	Kernel   string
	Times    Timings
	Roofline roofline.Result
	Metrics  []Metric
	// NumBottlenecks is M, the number of distinct directions wanted (default 1).
	NumBottlenecks int
	// NumCauses and NumFixes per bottleneck (defaults 2 and 1).
	NumCauses, NumFixes int
	// Explored lists directions tried already, to be avoided.
	Explored []string
}

// OptimizeData feeds the optimize template.
type OptimizeData struct {
	Target
	Problem    string
	Kernel     string
	Times      Timings
	Roofline   roofline.Result
	Bottleneck Bottleneck
	// Attempts are earlier attempts on this kernel, oldest first.
	Attempts    []Attempt
	Reflections []Reflection
	// TargetSpeedup is the improvement asked for over the best time (default 1.1).
	TargetSpeedup float64
	// Inspirations are correct kernels strong elsewhere (the slot's further
	// parents), shown for ideas.
	Inspirations []Inspiration
}

// Inspiration is another correct kernel shown with the one to rewrite.
type Inspiration struct {
	ID string
	// Cell says how it differs (the strategy's behaviour cell), if known.
	Cell   string
	TimeMS float64
	Source string
}

// Attempt is one earlier rewrite, as shown to the model.
type Attempt struct {
	Round     int
	Direction string
	TimeMS    float64 // 0 when it did not get timed
	Passed    bool
	Failure   string // verification check that failed
	Reason    string
}

// RefineData feeds the refine template.
type RefineData struct {
	Target
	Problem string
	Kernel  string
	// Failure names the verification check that failed ("correctness",
	// "static", "determinism", ...) and Reason is the harness's one line
	// ("max abs err 3e-2 at output 0").
	Failure, Reason string
	// Details is extra evidence (a traceback tail), optional.
	Details string
	// Attempt counts refinements of this candidate from 1, of MaxAttempts.
	Attempt, MaxAttempts int
	// Previous lists earlier failures of this candidate ("name: reason").
	Previous []string
	// Direction is the optimization the kernel was attempting, if any.
	Direction string
}

// ReflectData feeds the reflect template.
type ReflectData struct {
	Target
	Round         int
	Bottleneck    Bottleneck
	BeforeMS      float64
	AfterMS       float64 // 0 when the attempt was not timed
	Before, After roofline.Result
	Passed        bool
	Failure       string
	Reason        string
}

// GenerateData feeds the generate template.
type GenerateData struct {
	Target
	Problem string
	// DType is the precision the task runs in (fp32, fp16, bf16), if known.
	DType string
	// Feedback says why the previous generated kernel failed; PreviousKernel is it.
	Feedback       string
	PreviousKernel string
}

// Categories of bottlenecks.
const (
	CategoryMemory  = "memory"
	CategoryCompute = "compute"
	CategoryLatency = "latency"
)

// Diagnosis is the reply to the diagnose prompt.
type Diagnosis struct {
	Bottlenecks []Bottleneck `json:"bottlenecks"`
}

// Bottleneck is one diagnosed limit and what to do about it: one direction.
type Bottleneck struct {
	Rank       int         `json:"rank,omitempty"`
	Category   string      `json:"category"`
	Summary    string      `json:"summary"`
	Reasoning  string      `json:"reasoning,omitempty"`
	RootCauses []RootCause `json:"root_causes,omitempty"`
	Fixes      []Fix       `json:"fixes,omitempty"`
}

// RootCause is a cause with the metric evidence for it.
type RootCause struct {
	Cause    string     `json:"cause"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Evidence cites one metric.
type Evidence struct {
	Metric         string `json:"metric"`
	Value          Value  `json:"value"`
	Interpretation string `json:"interpretation,omitempty"`
}

// Fix is a recommended change.
type Fix struct {
	Fix       string `json:"fix"`
	Rationale string `json:"rationale,omitempty"`
}

// Value is a metric value as the model wrote it: a JSON string, number or bool.
type Value string

// UnmarshalJSON accepts a string, a number, a bool or null.
func (v *Value) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*v = Value(s)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		*v = Value(strconv.FormatFloat(f, 'g', -1, 64))
		return nil
	}
	var t bool
	if err := json.Unmarshal(b, &t); err == nil {
		*v = Value(strconv.FormatBool(t))
		return nil
	}
	if string(b) == "null" {
		*v = ""
		return nil
	}
	return fmt.Errorf("metric value %s: want a string or a number", b)
}

// Direction is a one-line label of the bottleneck ("memory: uncoalesced loads").
func (b Bottleneck) Direction() string {
	return b.Category + ": " + b.Summary
}

// categoryAliases maps what models write to the three categories.
var categoryAliases = map[string]string{
	"memory": CategoryMemory, "memory-bound": CategoryMemory, "memory_bound": CategoryMemory, "bandwidth": CategoryMemory,
	"compute": CategoryCompute, "compute-bound": CategoryCompute, "compute_bound": CategoryCompute,
	"latency": CategoryLatency, "latency-bound": CategoryLatency, "latency_bound": CategoryLatency,
	"underutilized": CategoryLatency, "under-utilized": CategoryLatency, "underutilised": CategoryLatency,
	"under-utilised": CategoryLatency, "occupancy": CategoryLatency,
}

// Normalize maps category spellings to memory/compute/latency, drops entries
// without a summary or repeating an earlier one, keeps at most want entries
// (want <= 0: all) and numbers them by rank.
func (d Diagnosis) Normalize(want int) Diagnosis {
	var out []Bottleneck
	seen := map[string]bool{}
	for _, b := range d.Bottlenecks {
		b.Category = strings.ToLower(strings.TrimSpace(b.Category))
		if c, ok := categoryAliases[b.Category]; ok {
			b.Category = c
		}
		key := strings.ToLower(strings.Join(strings.Fields(b.Summary), " "))
		if key == "" || seen[b.Category+"|"+key] {
			continue
		}
		seen[b.Category+"|"+key] = true
		out = append(out, b)
	}
	slices.SortStableFunc(out, func(a, b Bottleneck) int {
		if a.Rank == 0 || b.Rank == 0 {
			return 0
		}
		return a.Rank - b.Rank
	})
	if want > 0 && len(out) > want {
		out = out[:want]
	}
	for i := range out {
		out[i].Rank = i + 1
	}
	return Diagnosis{Bottlenecks: out}
}

// Validate reports a diagnosis that cannot be used: no bottleneck, or a
// category other than memory, compute or latency (call Normalize first).
func (d Diagnosis) Validate() error {
	if len(d.Bottlenecks) == 0 {
		return fmt.Errorf("validate diagnosis: no bottleneck with a summary")
	}
	for i, b := range d.Bottlenecks {
		switch b.Category {
		case CategoryMemory, CategoryCompute, CategoryLatency:
		default:
			return fmt.Errorf("validate diagnosis: bottleneck %d: category %q is not memory, compute or latency", i+1, b.Category)
		}
	}
	return nil
}

// Reflection is the reply to the reflect prompt.
type Reflection struct {
	// Round is set by the caller, not the model.
	Round               int      `json:"round,omitempty"`
	WasDiagnosisCorrect bool     `json:"was_diagnosis_correct"`
	WasFixEffective     bool     `json:"was_fix_effective"`
	ExpectedOutcome     string   `json:"expected_outcome,omitempty"`
	ActualOutcome       string   `json:"actual_outcome,omitempty"`
	Reasoning           string   `json:"reasoning,omitempty"`
	Lessons             []string `json:"lessons,omitempty"`
	AvoidPatterns       []string `json:"avoid_patterns,omitempty"`
	TryPatterns         []string `json:"try_patterns,omitempty"`
}
