package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
)

// KernelBench-compatible exports (kernelbench.md §2 "JSON formats"), so that
// KernelBench's own analysis scripts read a kagent sweep:
//
//	eval_results.json   {"19": [{"sample_id": 0, "compiled", "correctness",
//	                    "metadata": {...}, "runtime": median ms (-1 when not
//	                    correct), "runtime_stats": stats}], ...}
//	baseline_time_torch.json, baseline_time_torch_compile_inductor_default.json
//	                    {"level1": {"19_ReLU.py": stats}} in ms, as measured
//	                    by the sweep on its own machine
//	fast_p.json         per baseline, the analysis record of
//	                    benchmark_eval_analysis.py: {run_name, level, hardware,
//	                    total_count, total_eval, compiled_count, correct_count,
//	                    compilation_rate, correctness_rate, geo_mean_speedup,
//	                    fast_p: {"0.0": ..., "2.0": ...}, statistic}
//
// where stats is KernelBench's {mean, std, min, max, num_trials, hardware,
// device} with median, arithmetic_mean and statistic added. Problems are
// listed by id (1, 2, 10: numbers, not strings), as in results.json and the
// report.
//
// Every time is a median. kagent's speedups and fast_p divide medians, which
// noise moves less than means; KernelBench's harness writes the mean as
// runtime, and benchmark_eval_analysis.py divides a baseline file's "mean"
// by eval_results' "runtime". So that the script computes the fast_p kagent
// reports, both fields hold the median: "runtime" and every stats' "mean"
// equal its "median", "statistic" says "median", and the arithmetic mean of
// the trials is kept as "arithmetic_mean".

// timeStatistic names the statistic of every time the KernelBench files hold.
const timeStatistic = "median"

// kbStats is KernelBench's timing record, with the statistic named (see
// above): Mean, the field KernelBench reads, holds the median.
type kbStats struct {
	Mean      float64 `json:"mean"`
	Median    float64 `json:"median"`
	ArithMean float64 `json:"arithmetic_mean,omitempty"`
	Statistic string  `json:"statistic"`
	Std       float64 `json:"std"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	NumTrials int     `json:"num_trials"`
	Hardware  string  `json:"hardware"`
	Device    string  `json:"device"`
}

type kbEval struct {
	SampleID     int            `json:"sample_id"`
	Compiled     bool           `json:"compiled"`
	Correctness  bool           `json:"correctness"`
	Metadata     map[string]any `json:"metadata"`
	Runtime      float64        `json:"runtime"`
	RuntimeStats *kbStats       `json:"runtime_stats,omitempty"`
}

type kbAnalysis struct {
	RunName         string             `json:"run_name"`
	Level           int                `json:"level"`
	Hardware        string             `json:"hardware"`
	Baseline        string             `json:"baseline"`
	TotalCount      int                `json:"total_count"`
	TotalEval       int                `json:"total_eval"`
	CompiledCount   int                `json:"compiled_count"`
	CorrectCount    int                `json:"correct_count"`
	CompilationRate float64            `json:"compilation_rate"`
	CorrectnessRate float64            `json:"correctness_rate"`
	GeoMeanSpeedup  float64            `json:"geo_mean_speedup"`
	FastP           map[string]float64 `json:"fast_p"`
	Statistic       string             `json:"statistic"`
}

// KernelBench's baseline names.
const (
	baselineEager   = "baseline_time_torch"
	baselineCompile = "baseline_time_torch_compile_inductor_default"
)

func stats(t *Timing, r ProblemResult) *kbStats {
	if t == nil {
		return nil
	}
	s := &kbStats{Mean: t.MedianMS, Median: t.MedianMS, ArithMean: t.MeanMS, Statistic: timeStatistic, Std: t.StdMS,
		Min: t.MinMS, Max: t.MaxMS, NumTrials: t.N, Hardware: r.Device, Device: r.Platform}
	if s.Min == 0 {
		s.Min = t.MedianMS
	}
	if s.Max == 0 {
		s.Max = t.MedianMS
	}
	return s
}

// writeKernelBench writes the KernelBench-compatible files into dir.
func writeKernelBench(dir string, m Manifest, results []ProblemResult) error {
	v := newView(m, results)
	var evals, eagerBase, compileBase object // by problem id, as KernelBench's analysis walks them
	hardware := ""
	for _, p := range m.Problems {
		r, ok := v.by[p.ID]
		if !ok {
			continue // KernelBench counts a missing problem as incorrect
		}
		if hardware == "" {
			hardware = r.Device
		}
		e := kbEval{Compiled: r.Compiled, Correctness: r.Correct, Runtime: -1,
			Metadata: map[string]any{"hardware": r.Device, "device": r.Platform, "kagent_status": string(r.Status)}}
		if r.Correct && r.Kernel != nil {
			e.Runtime, e.RuntimeStats = r.Kernel.MedianMS, stats(r.Kernel, r)
		}
		if !r.Correct {
			key := "correctness_issue"
			if r.Status == StatusError {
				key = "runtime_error"
			} else if !r.Compiled {
				key = "compilation_error"
			}
			e.Metadata[key] = failureReason(r)
		}
		evals = append(evals, member{strconv.Itoa(p.ID), []kbEval{e}})
		if s := stats(r.Eager, r); s != nil {
			eagerBase = append(eagerBase, member{p.File, s})
		}
		if s := stats(r.Compile, r); s != nil {
			compileBase = append(compileBase, member{p.File, s})
		}
	}
	level := fmt.Sprintf("level%d", m.Level)
	analysis := map[string]kbAnalysis{}
	for _, b := range []struct {
		name    string
		compile bool
	}{{baselineEager, false}, {baselineCompile, true}} {
		outs := v.outcomes(b.compile)
		a := kbAnalysis{RunName: filepath.Base(dir), Level: m.Level, Hardware: hardware, Baseline: b.name,
			TotalCount: len(m.Problems), TotalEval: len(v.by), FastP: map[string]float64{}, Statistic: timeStatistic}
		for _, r := range v.by {
			if r.Compiled {
				a.CompiledCount++
			}
			if r.Correct {
				a.CorrectCount++
			}
		}
		if a.TotalCount > 0 {
			a.CompilationRate = float64(a.CompiledCount) / float64(a.TotalCount)
			a.CorrectnessRate = float64(a.CorrectCount) / float64(a.TotalCount)
		}
		a.GeoMeanSpeedup, _ = GeoMean(outs)
		for _, p := range Ps {
			a.FastP[strconv.FormatFloat(p, 'f', 1, 64)] = FastP(outs, p)
		}
		analysis[b.name] = a
	}
	for name, val := range map[string]any{
		EvalResultsFile:     evals,
		BaselineEagerFile:   object{{level, eagerBase}},
		BaselineCompileFile: object{{level, compileBase}},
		FastPFile:           analysis,
	} {
		if err := writeJSON(filepath.Join(dir, name), val); err != nil {
			return fmt.Errorf("write kernelbench files: %w", err)
		}
	}
	return nil
}

// object is a JSON object that keeps its members in order. encoding/json
// writes a map's keys sorted as strings, which puts problem "10" before "2";
// the KernelBench files list problems by id instead.
type object []member

type member struct {
	key string
	val any
}

// MarshalJSON implements json.Marshaler. A nil object is {}.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.val)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteReport writes the report (report.md, fast_p.svg) and the
// KernelBench-compatible files of a sweep into dir. now is the report's
// timestamp.
func WriteReport(dir string, m Manifest, results []ProblemResult, now time.Time) error {
	svg, err := Plot(m, results)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, PlotFile), svg, 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, ReportFile), Markdown(m, results, now), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return writeKernelBench(dir, m, results)
}
