package sweep

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runnerFunc is a Runner made of a function.
type runnerFunc func(ctx context.Context, job Job) (ProblemResult, error)

func (f runnerFunc) RunProblem(ctx context.Context, job Job) (ProblemResult, error) {
	return f(ctx, job)
}

// skewedResult is a correct result whose means and medians give different
// speedups: by medians 1.05 over eager, by means 1.0/1.3 = 0.77.
func skewedResult(id int) ProblemResult {
	if id%3 == 0 {
		return fixedResult(id) // failed
	}
	k := float64(id)
	return ProblemResult{Status: StatusDone, Correct: true, Compiled: true, Origin: OriginSupplied,
		Kernel:   &Timing{MedianMS: k, MeanMS: 1.3 * k, StdMS: 0.1 * k, MinMS: 0.9 * k, MaxMS: 3 * k, N: 100},
		Eager:    &Timing{MedianMS: 1.05 * k, MeanMS: k, StdMS: 0.01, MinMS: 0.95 * k, MaxMS: 1.1 * k, N: 100},
		Compile:  &Timing{MedianMS: 0.5 * k, MeanMS: 0.6 * k, N: 100},
		Platform: "cuda", Device: "NVIDIA H200", Representative: true}
}

// TestKernelBenchFilesUseTheMedian: eval_results.json's runtime and the
// baseline files' mean (the fields KernelBench's benchmark_eval_analysis.py
// divides) hold the median, so the script's fast_p is kagent's; the
// arithmetic mean is kept as arithmetic_mean.
func TestKernelBenchFilesUseTheMedian(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	run := runnerFunc(func(_ context.Context, job Job) (ProblemResult, error) { return skewedResult(job.Problem.ID), nil })
	if _, err := Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1, Strategy: "greedy", Runner: run}); err != nil {
		t.Fatal(err)
	}
	type stats struct {
		Mean, Median, Std, Min, Max float64
		ArithMean                   float64 `json:"arithmetic_mean"`
		Statistic                   string
		NumTrials                   int `json:"num_trials"`
	}
	var evals map[string][]struct {
		Correctness  bool
		Runtime      float64
		RuntimeStats *stats `json:"runtime_stats"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, EvalResultsFile)), &evals); err != nil {
		t.Fatal(err)
	}
	base := map[string]map[string]map[string]stats{}
	for _, f := range []string{BaselineEagerFile, BaselineCompileFile} {
		var b map[string]map[string]stats
		if err := json.Unmarshal(readFile(t, filepath.Join(dir, f)), &b); err != nil {
			t.Fatal(err)
		}
		base[f] = b
	}
	var analysis map[string]struct {
		FastP     map[string]float64 `json:"fast_p"`
		Statistic string
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, FastPFile)), &analysis); err != nil {
		t.Fatal(err)
	}

	m := goldenManifest(t)
	for _, p := range m.Problems {
		want := skewedResult(p.ID)
		e := evals[strconv.Itoa(p.ID)][0]
		if !want.Correct {
			if e.Runtime != -1 || e.RuntimeStats != nil {
				t.Errorf("problem %d (failed): runtime %v, stats %+v; want -1 and none", p.ID, e.Runtime, e.RuntimeStats)
			}
			continue
		}
		k := want.Kernel
		wantStats := stats{Mean: k.MedianMS, Median: k.MedianMS, ArithMean: k.MeanMS, Statistic: "median", Std: k.StdMS,
			Min: k.MinMS, Max: k.MaxMS, NumTrials: 100}
		if e.Runtime != k.MedianMS || e.RuntimeStats == nil || *e.RuntimeStats != wantStats {
			t.Errorf("problem %d: runtime %v, runtime_stats %+v; want %v and %+v", p.ID, e.Runtime, e.RuntimeStats, k.MedianMS, wantStats)
		}
		b := base[BaselineEagerFile]["level1"][p.File]
		if b.Mean != want.Eager.MedianMS || b.Median != want.Eager.MedianMS || b.ArithMean != want.Eager.MeanMS || b.Statistic != "median" {
			t.Errorf("problem %d: eager baseline %+v; want mean = median = %v, arithmetic_mean %v", p.ID, b, want.Eager.MedianMS, want.Eager.MeanMS)
		}
	}

	// benchmark_eval_analysis.py: speedup = baseline "mean" / "runtime",
	// fast_p = #(correct and speedup > p) / n.
	for _, b := range []struct {
		file    string
		compile bool
	}{{BaselineEagerFile, false}, {BaselineCompileFile, true}} {
		name := strings.TrimSuffix(b.file, ".json")
		var outs []Outcome
		for _, p := range m.Problems {
			want := skewedResult(p.ID)
			outs = append(outs, Outcome{Correct: want.Correct, Speedup: speedup(map[bool]*Timing{false: want.Eager, true: want.Compile}[b.compile], want.Kernel)})
		}
		if got := analysis[name].Statistic; got != "median" {
			t.Errorf("%s: fast_p.json statistic %q, want median", name, got)
		}
		for _, p := range Ps {
			key := strconv.FormatFloat(p, 'f', 1, 64)
			n, fast := 0, 0
			for _, pr := range m.Problems {
				n++
				e := evals[strconv.Itoa(pr.ID)][0]
				bl, ok := base[b.file]["level1"][pr.File]
				if e.Correctness && ok && bl.Mean/e.Runtime > p {
					fast++
				}
			}
			script := float64(fast) / float64(n)
			if kagent := FastP(outs, p); script != kagent || analysis[name].FastP[key] != kagent {
				t.Errorf("%s fast_%s: the script's way %v, kagent %v, fast_p.json %v", name, key, script, kagent, analysis[name].FastP[key])
			}
		}
	}
	// The difference matters here: by means, fast_0.8 against eager would be 0.
	if got := analysis[baselineEager].FastP["0.8"]; got == 0 {
		t.Errorf("fast_0.8 vs eager is 0: the test's times no longer tell the statistics apart")
	}

	md := string(readFile(t, filepath.Join(dir, ReportFile)))
	if !strings.Contains(md, "Every time here is the median of the timed calls, and so are those of the KernelBench files: `runtime` in eval_results.json and `mean` in") {
		t.Errorf("report does not say which statistic runtime and fast_p use:\n%s", md)
	}
}
