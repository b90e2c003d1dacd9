package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
	"github.com/kagent-kernels/kagent/platform"
)

// File formats this package writes (the "format" field of each file).
const (
	FormatManifest = "kagent.sweep/v1"
	FormatResults  = "kagent.sweep.results/v1"
)

// Files of a sweep dir.
const (
	ManifestFile = "sweep.json"
	ResultsFile  = "results.json"
	StoreFile    = "history.db"
	ReportFile   = "report.md"
	PlotFile     = "fast_p.svg"
	ProblemsDir  = "problems"
	RunsDir      = "runs"
	// KernelBench-compatible exports.
	EvalResultsFile     = "eval_results.json"
	BaselineEagerFile   = "baseline_time_torch.json"
	BaselineCompileFile = "baseline_time_torch_compile_inductor_default.json"
	FastPFile           = "fast_p.json"
)

// Status is how a problem ended.
type Status string

// Problem statuses. Done and failed are final: a later sweep skips the
// problem. An error is not: the next sweep runs the problem again.
const (
	StatusDone   Status = "done"   // optimized; Correct says whether the final kernel verified
	StatusFailed Status = "failed" // no correct kernel: every generation seed failed, or the input kernel was rejected
	StatusError  Status = "error"  // something other than the kernel went wrong (worker, disk, LLM outage)
)

// Final reports whether a later sweep keeps the result instead of running
// the problem again.
func (s Status) Final() bool { return s == StatusDone || s == StatusFailed }

// Timing is a measured time in milliseconds, as results files keep it.
type Timing struct {
	MedianMS float64 `json:"median_ms"`
	MeanMS   float64 `json:"mean_ms"`
	StdMS    float64 `json:"std_ms"`
	MinMS    float64 `json:"min_ms,omitempty"`
	MaxMS    float64 `json:"max_ms,omitempty"`
	N        int     `json:"n"`
	// HostBound: the host time per call came near the median on a GPU
	// (platform.Timing.HostBound): the time includes host overhead.
	HostBound bool `json:"host_bound,omitempty"`
	// Clock names what timed it (platform.Timing.Clock).
	Clock string `json:"clock,omitempty"`
}

// TimingOf condenses a platform timing (nil for nil or an unavailable one).
func TimingOf(t *platform.Timing) *Timing {
	if t == nil || t.Unavailable != "" || t.MedianMS <= 0 {
		return nil
	}
	out := &Timing{MedianMS: t.MedianMS, MeanMS: t.MeanMS, StdMS: t.CV * t.MeanMS, N: t.N, HostBound: t.HostBound(), Clock: t.Clock}
	if out.MeanMS == 0 {
		out.MeanMS = t.MedianMS
	}
	if len(t.TimesMS) > 0 {
		out.MinMS, out.MaxMS = slices.Min(t.TimesMS), slices.Max(t.TimesMS)
	}
	return out
}

// Usage is the LLM spend of one problem (generation and optimization).
type Usage struct {
	Calls  int   `json:"calls"`
	Tokens int64 `json:"tokens"`
	// EstimatedCalls counts the calls whose tokens kagent estimated (the
	// server reported no usage).
	EstimatedCalls int     `json:"estimated_calls,omitempty"`
	CostUSD        float64 `json:"cost_usd"`
	// Seconds is the summed wall time of the calls (concurrent calls overlap).
	Seconds float64 `json:"seconds"`
}

// ProblemResult is the outcome of one problem: everything the report,
// fast_p and the KernelBench exports are computed from.
type ProblemResult struct {
	ID    int    `json:"id"`
	Name  string `json:"name"`
	File  string `json:"file"`
	Level int    `json:"level"`

	Status Status `json:"status"`
	// Correct: the final kernel passed verification (and, when it is a
	// rewrite, the acceptance gate).
	Correct bool `json:"correct"`
	// Compiled: a kernel was imported and called (KernelBench's "compiled").
	Compiled bool `json:"compiled"`
	// Error says why the problem failed or errored.
	Error string `json:"error,omitempty"`

	// Origin is where the first kernel came from: "generated" or "supplied".
	Origin string `json:"origin,omitempty"`
	// Generation, when the first kernel was generated (or tried to be).
	Generation *GenerationSummary `json:"generation,omitempty"`

	// RunID is the optimization run in the sweep's store; StopReason why it
	// stopped; Improved whether it beat its first kernel.
	RunID      string `json:"run_id,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	Improved   bool   `json:"improved"`

	// Kernel is the final kernel's time, Input the first kernel's, Eager and
	// Compile the PyTorch baselines' (nil: not timed or unavailable; the
	// *Unavailable fields say why).
	Kernel             *Timing `json:"kernel,omitempty"`
	Input              *Timing `json:"input,omitempty"`
	Eager              *Timing `json:"eager,omitempty"`
	Compile            *Timing `json:"compile,omitempty"`
	EagerUnavailable   string  `json:"eager_unavailable,omitempty"`
	CompileUnavailable string  `json:"compile_unavailable,omitempty"`

	// Speedups of the final kernel by median time (0: unknown).
	SpeedupEager   float64 `json:"speedup_eager"`
	SpeedupCompile float64 `json:"speedup_compile"`
	SpeedupInput   float64 `json:"speedup_input"`

	Platform string `json:"platform,omitempty"`
	Device   string `json:"device,omitempty"`
	// Representative is false when the times say nothing about GPU speed.
	Representative bool `json:"representative"`

	LLM Usage `json:"llm"`
	// WallSeconds is the problem's wall time in the run that finished it;
	// minus LLM.Seconds it is the harness overhead.
	WallSeconds float64 `json:"wall_seconds"`

	// Shard is the shard that produced the result ("" for a local run);
	// FinishedAt when. Neither appears in the report.
	Shard      string    `json:"shard,omitempty"`
	FinishedAt time.Time `json:"finished_at"`
}

// GenerationSummary is how the first kernel was generated.
type GenerationSummary struct {
	RunID string `json:"run_id,omitempty"`
	Seeds int    `json:"seeds"`
	// Winner is the attempt that passed ("" when none did).
	Winner string `json:"winner,omitempty"`
	// Kernels counts the kernels verified.
	Kernels int `json:"kernels"`
	// Failures is each failed seed's last failure, by seed.
	Failures []string `json:"failures,omitempty"`
}

// Key is the problem's name in the sweep dir ("19_ReLU").
func (r ProblemResult) Key() string { return strings.TrimSuffix(r.File, ".py") }

// Outcome against eager (compile false) or torch.compile (compile true).
func (r ProblemResult) Outcome(compile bool) Outcome {
	if compile {
		return Outcome{Correct: r.Correct, Speedup: r.SpeedupCompile}
	}
	return Outcome{Correct: r.Correct, Speedup: r.SpeedupEager}
}

// speedup is a/b, 0 when either is unknown.
func speedup(base *Timing, k *Timing) float64 {
	if base == nil || k == nil || base.MedianMS <= 0 || k.MedianMS <= 0 {
		return 0
	}
	return base.MedianMS / k.MedianMS
}

// fillSpeedups computes the speedups from the timings.
func (r *ProblemResult) fillSpeedups() {
	r.SpeedupEager = speedup(r.Eager, r.Kernel)
	r.SpeedupCompile = speedup(r.Compile, r.Kernel)
	r.SpeedupInput = speedup(r.Input, r.Kernel)
}

// Manifest describes a sweep: what it runs. It is written once to
// sweep.json and copied into every results file, so that shards and merges
// can check they belong to the same sweep.
type Manifest struct {
	Format string `json:"format"`
	// Source is the problems folder as the command named it.
	Source string `json:"source"`
	// Level is the KernelBench level (0: any folder of problem files).
	Level int `json:"level"`
	// Selection is the canonical problem selection ("1-20,36" or "all").
	Selection string `json:"selection"`
	Strategy  string `json:"strategy"`
	// Size is the timed shape asked for ("": the problems' own sizes).
	Size string `json:"size,omitempty"`
	// Problems are the selected problems, by id.
	Problems []Problem `json:"problems"`
}

// Compatible reports whether two manifests describe the same sweep: the
// same level, strategy, size and problems (the source path may differ between
// machines).
func (m Manifest) Compatible(o Manifest) error {
	switch {
	case m.Level != o.Level:
		return fmt.Errorf("%w: level %d, not %d", ErrMismatch, o.Level, m.Level)
	case m.Strategy != o.Strategy:
		return fmt.Errorf("%w: strategy %s, not %s", ErrMismatch, o.Strategy, m.Strategy)
	case m.Size != o.Size:
		return fmt.Errorf("%w: size %q, not %q", ErrMismatch, o.Size, m.Size)
	case !slices.EqualFunc(m.Problems, o.Problems, func(a, b Problem) bool { return a.ID == b.ID && a.File == b.File }):
		return fmt.Errorf("%w: problems %s (%d files), not %s (%d files)", ErrMismatch, o.Selection, len(o.Problems), m.Selection, len(m.Problems))
	}
	return nil
}

// sortProblems puts the problems in id order (numeric: 2 before 10), the
// order every file and table of a sweep lists them in. FindProblems already
// returns them so; a manifest read from disk is sorted again.
func (m *Manifest) sortProblems() {
	slices.SortFunc(m.Problems, func(a, b Problem) int { return a.ID - b.ID })
}

// ids lists the manifest's problem ids.
func (m Manifest) ids() []int { return problemIDs(m.Problems) }

// Results is a results file: results.json of a local run or a merge, or
// shard-i-of-n.json of one shard.
type Results struct {
	Format string   `json:"format"`
	Sweep  Manifest `json:"sweep"`
	// Shard is "i/n" for a shard's file, "" otherwise.
	Shard string `json:"shard,omitempty"`
	// Problems are the ids the file is responsible for (the shard's slice,
	// or every problem of the sweep).
	Problems []int `json:"problems"`
	// Complete: every problem of Problems has a final result.
	Complete  bool      `json:"complete"`
	UpdatedAt time.Time `json:"updated_at"`
	// Results are the results known, by id.
	Results []ProblemResult `json:"results"`
}

// complete reports whether every id has a final result.
func complete(ids []int, results []ProblemResult) bool {
	final := map[int]bool{}
	for _, r := range results {
		if r.Status.Final() {
			final[r.ID] = true
		}
	}
	for _, id := range ids {
		if !final[id] {
			return false
		}
	}
	return true
}

// ReadResults reads a results file.
func ReadResults(path string) (Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Results{}, fmt.Errorf("read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return Results{}, fmt.Errorf("read results %s: %w: %v", filepath.Base(path), ErrFormat, err)
	}
	if r.Format != FormatResults {
		return Results{}, fmt.Errorf("read results %s: %w: format %q, want %q", filepath.Base(path), ErrFormat, r.Format, FormatResults)
	}
	r.Sweep.sortProblems()
	slices.Sort(r.Problems)
	slices.SortFunc(r.Results, func(a, b ProblemResult) int { return a.ID - b.ID })
	return r, nil
}

// readManifest reads dir/sweep.json; ok is false when there is none.
func readManifest(dir string) (Manifest, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, false, nil
	}
	if err != nil {
		return Manifest{}, false, fmt.Errorf("read sweep manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, false, fmt.Errorf("read sweep manifest: %w: %v", ErrFormat, err)
	}
	if m.Format != FormatManifest {
		return Manifest{}, false, fmt.Errorf("read sweep manifest: %w: format %q, want %q", ErrFormat, m.Format, FormatManifest)
	}
	m.sortProblems()
	return m, true, nil
}

// better reports whether result a should replace b for the same problem: a
// final result beats one that is not, then the later one wins.
func better(a, b ProblemResult) bool {
	if a.Status.Final() != b.Status.Final() {
		return a.Status.Final()
	}
	return a.FinishedAt.After(b.FinishedAt)
}

// union combines results by problem id (see better) and sorts them by id.
func union(sets ...[]ProblemResult) []ProblemResult {
	by := map[int]ProblemResult{}
	for _, set := range sets {
		for _, r := range set {
			if have, ok := by[r.ID]; !ok || better(r, have) {
				by[r.ID] = r
			}
		}
	}
	out := make([]ProblemResult, 0, len(by))
	for _, r := range by {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ProblemResult) int { return a.ID - b.ID })
	return out
}

// writeJSON writes v as indented JSON, whole or not at all.
func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// finite replaces non-finite numbers by 0 (JSON has no Inf or NaN).
func finite(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}
