// Command enginebench measures kagent's evaluation engine on a real GPU and
// prints a table (and writes results.json / results.md under -out):
//
//  1. wall time per candidate evaluation (3-draw verify + timing, Triton
//     compile included) with warm workers, against the one-fresh-process-per-
//     step design (a new Python process for the test, another for timing);
//  2. the same kernel timed five times: the spread of the medians (CV);
//  3. kagent's time against Nsight Compute's gpu__time_duration;
//  4. the eager baseline against itself through the interleaved A/B path.
//
// Usage (on the GPU machine):
//
//	enginebench -python python3 -repo . -out results/ [-ncu ncu]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/internal/sandbox"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cuda"
	"github.com/kagent-kernels/kagent/platform/worker"
)

type options struct {
	python, repo, out, device, template, problem, large string
	n, ncuProfiles                                      int
	skipEval, warmOnly, baselines                       bool
	cache                                               string
}

func main() {
	sandbox.Main() // the runners' sandbox re-executes this binary as its init
	var o options
	flag.StringVar(&o.python, "python", "python3", "Python with torch and triton")
	flag.StringVar(&o.repo, "repo", ".", "repository root")
	flag.StringVar(&o.out, "out", "", "folder for results.json and results.md")
	flag.StringVar(&o.device, "device", "cuda", "cuda or cpu")
	flag.StringVar(&o.template, "template", "cmd/enginebench/candidate.tmpl.py", "candidate template ({{VARIANT}}, {{WARPS}})")
	flag.StringVar(&o.problem, "problem", "cmd/enginebench/problems/softmax_small", "small problem for the evaluation-speed comparison")
	flag.StringVar(&o.large, "large", "cmd/enginebench/problems/softmax_large,examples/rmsnorm", "comma-separated problems for the stability and A/B measurements")
	flag.IntVar(&o.n, "n", 10, "distinct candidates")
	flag.IntVar(&o.ncuProfiles, "ncu-profiles", 3, "ncu profiles per problem (each one call in its own process); their median is the reference")
	flag.BoolVar(&o.skipEval, "skip-eval", false, "skip the warm/fresh evaluation comparison")
	flag.BoolVar(&o.baselines, "baselines", false, "also time the eager and compile baselines 5 times each")
	flag.BoolVar(&o.warmOnly, "warm-only", false, "measure only the warm workers' evaluations (no fresh-process design)")
	flag.StringVar(&o.cache, "cache", "", "cache dir (default: a fresh temporary one, so every Triton compile is counted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}

// results is what the benchmark writes.
type results struct {
	Date       string          `json:"date"`
	Device     string          `json:"device"`
	Torch      string          `json:"torch"`
	Triton     string          `json:"triton"`
	PoolStartS float64         `json:"pool_start_s"`
	Warm       []float64       `json:"warm_eval_s"`
	Fresh      []float64       `json:"fresh_eval_s"`
	WarmMedian float64         `json:"warm_median_s"`
	FreshMed   float64         `json:"fresh_median_s"`
	Ratio      float64         `json:"fresh_over_warm"`
	Stability  []stability     `json:"stability"`
	AB         []abResult      `json:"ab_self"`
	NCU        []ncuResult     `json:"ncu"`
	Failures   []string        `json:"failures,omitempty"`
	Verdicts   map[string]bool `json:"verdicts"`
}

type stability struct {
	Problem string    `json:"problem"`
	Target  string    `json:"target"`
	Medians []float64 `json:"medians_ms"`
	CV      float64   `json:"cv_of_medians"`
	InnerCV float64   `json:"median_inner_cv"`
	Clock   string    `json:"clock"`
	Late    int       `json:"late_calls"`
}

type ncuResult struct {
	Problem  string    `json:"problem"`
	KagentMS float64   `json:"kagent_median_ms"`
	NCUMS    float64   `json:"ncu_gpu_time_ms"` // the median of NCUAllMS
	NCUAllMS []float64 `json:"ncu_gpu_time_all_ms"`
	Diff     float64   `json:"relative_difference"`
	Kernels  []string  `json:"kernels"`
	ProfileS float64   `json:"profile_seconds"`
}

type abResult struct {
	Problem string  `json:"problem"`
	A, B    float64 `json:"-"`
	AMS     float64 `json:"a_median_ms"`
	BMS     float64 `json:"b_median_ms"`
	Ratio   float64 `json:"ratio"`
}

func run(ctx context.Context, o options, w io.Writer) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cache := o.cache
	if cache == "" {
		d, err := os.MkdirTemp("", "enginebench-cache-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cache = d
	}
	res := results{Date: time.Now().UTC().Format(time.RFC3339), Verdicts: map[string]bool{}}
	task, err := loadTask(ctx, o, filepath.Join(o.repo, o.problem), cache)
	if err != nil {
		return err
	}
	cands, err := writeCandidates(o, cache)
	if err != nil {
		return err
	}
	device := o.device
	cfg := func(cacheDir string, spare bool) worker.SessionConfig {
		c := worker.SessionConfig{Python: o.python, Device: device, Spare: spare, Isolate: true, CacheDir: cacheDir, Logger: log,
			Engine: worker.EngineOptions{RequireTriton: device == "cuda", Representative: device == "cuda", WarmupMS: 25, RepMS: 100}}
		if device == "cuda" {
			c.Profiler = cuda.NCUProfiler(platform.Config{Python: o.python, ProfileTimeout: 2 * time.Minute})
		}
		return c
	}

	warmCache := filepath.Join(cache, "warm")
	if !o.skipEval {
		if err := compareDesigns(ctx, o, task, cands, cfg, cache, warmCache, &res); err != nil {
			return err
		}
	}
	// 2, 3 and 4. Stability of repeated timings, ncu against kagent's time,
	// and eager A/B against itself.
	// One session for every problem, reopened on each (its workers stay warm).
	var ls *worker.Session
	defer func() {
		if ls != nil {
			ls.Close()
		}
	}()
	for _, dir := range strings.Split(o.large, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		lt, err := loadTask(ctx, o, filepath.Join(o.repo, dir), cache)
		if err != nil {
			return err
		}
		if ls == nil {
			if ls, err = worker.OpenSession(ctx, lt, cfg(warmCache, false)); err != nil {
				return err
			}
		} else if err := ls.Reopen(ctx, lt); err != nil {
			return err
		}
		if res.Device == "" {
			res.Device, res.Torch = ls.Hello.Device.Name, ls.Hello.Torch
		}
		kernel := platform.Target{Kind: platform.TargetKernel, Candidate: platform.Candidate{ID: "k", Path: cands[0].Path}}
		if lt.KernelPath != "" {
			kernel.Candidate = platform.Candidate{ID: "input", Path: lt.KernelPath}
		}
		log.Info("verifying", "problem", dir)
		if v, err := ls.Verify(ctx, kernel.Candidate); err != nil || !v.Passed {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: verify %v %s %s", dir, err, v.Failure, v.Reason))
		}
		var st stability
		for _, target := range []platform.Target{kernel, {Kind: platform.TargetEager}, {Kind: platform.TargetCompile}} {
			if target.Kind != platform.TargetKernel && !o.baselines {
				continue
			}
			log.Info("timing 5 times", "problem", dir, "target", target.Kind)
			tst := stability{Problem: dir, Target: string(target.Kind)}
			var inner []float64
			for i := 0; i < 5; i++ {
				tm, err := ls.Time(ctx, target)
				if err != nil {
					res.Failures = append(res.Failures, fmt.Sprintf("%s: time %s: %v", dir, target.Kind, err))
					break
				}
				if tm.Unavailable != "" {
					break
				}
				tst.Medians = append(tst.Medians, tm.MedianMS)
				tst.Clock, tst.Late = tm.Clock, tst.Late+tm.LateCalls
				inner = append(inner, tm.CV)
			}
			tst.CV, tst.InnerCV = cv(tst.Medians), median(inner)
			res.Stability = append(res.Stability, tst)
			if target.Kind == platform.TargetKernel {
				st = tst
			}
		}
		if err := write(o.out, res); err != nil {
			return err
		}
		if device == "cuda" && len(st.Medians) > 0 {
			log.Info("profiling with ncu", "problem", dir)
			t := time.Now()
			var all []float64
			var kernels []string
			for range max(1, o.ncuProfiles) {
				m, err := ls.Profile(ctx, kernel.Candidate)
				if err != nil {
					res.Failures = append(res.Failures, fmt.Sprintf("%s: ncu: %v", dir, err))
					break
				}
				all, kernels = append(all, m.TimeMS), m.Kernels
			}
			if len(all) > 0 {
				k, n := median(st.Medians), median(all)
				res.NCU = append(res.NCU, ncuResult{Problem: dir, KagentMS: k, NCUMS: n, NCUAllMS: all, Diff: (k - n) / n,
					Kernels: kernels, ProfileS: time.Since(t).Seconds() / float64(len(all))})
			}
		}
		log.Info("eager against itself", "problem", dir)
		eager := platform.Target{Kind: platform.TargetEager}
		a, b, err := ls.Compare(ctx, eager, eager)
		if err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: compare: %v", dir, err))
		} else {
			res.AB = append(res.AB, abResult{Problem: dir, AMS: a.MedianMS, BMS: b.MedianMS, Ratio: a.MedianMS / b.MedianMS})
		}
		// What is measured so far, in case the benchmark is cut short.
		if err := write(o.out, res); err != nil {
			return err
		}
	}
	report(w, res)
	return write(o.out, res)
}

// write saves results.json and results.md under out ("" writes nothing).
func write(out string, res results) error {
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "enginebench.json"), b, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, "enginebench.md"))
	if err != nil {
		return err
	}
	report(f, res)
	return f.Close()
}

// compareDesigns measures item 1: warm workers against one fresh process per
// step, on the same candidates with separate Triton caches.
func compareDesigns(ctx context.Context, o options, task *kerneldir.Task, cands []platform.Candidate,
	cfg func(string, bool) worker.SessionConfig, cache, warmCache string, res *results) error {
	device := o.device
	_ = device
	t0 := time.Now()
	sess, err := worker.OpenSession(ctx, task, cfg(warmCache, true))
	if err != nil {
		return err
	}
	res.PoolStartS = time.Since(t0).Seconds()
	res.Device, res.Torch = sess.Hello.Device.Name, sess.Hello.Torch
	if sess.Hello.Triton != nil {
		res.Triton = *sess.Hello.Triton
	}
	if _, err := sess.Info(ctx); err != nil { // problem load is per run, not per candidate
		sess.Close()
		return err
	}
	for _, c := range cands {
		t := time.Now()
		ok, why := evaluate(ctx, sess, c)
		res.Warm = append(res.Warm, time.Since(t).Seconds())
		res.Verdicts["warm/"+c.ID] = ok
		if !ok {
			res.Failures = append(res.Failures, "warm "+c.ID+": "+why)
		}
	}
	sess.Close()

	if o.warmOnly {
		res.WarmMedian = median(res.Warm)
		return nil
	}
	// 1b. One fresh process for the test and another for the timing, per candidate.
	freshCache := filepath.Join(cache, "fresh")
	for _, c := range cands {
		t := time.Now()
		ok, why := evaluateFresh(ctx, task, c, cfg(freshCache, false))
		res.Fresh = append(res.Fresh, time.Since(t).Seconds())
		res.Verdicts["fresh/"+c.ID] = ok
		if !ok {
			res.Failures = append(res.Failures, "fresh "+c.ID+": "+why)
		}
	}
	res.WarmMedian, res.FreshMed = median(res.Warm), median(res.Fresh)
	res.Ratio = sum(res.Fresh) / sum(res.Warm)
	return nil
}

func loadTask(ctx context.Context, o options, dir, cache string) (*kerneldir.Task, error) {
	return kerneldir.Load(ctx, dir, kerneldir.LoadOptions{Python: o.python, CacheDir: cache})
}

// writeCandidates renders n distinct candidates (distinct sources, so each
// is compiled by Triton).
func writeCandidates(o options, cache string) ([]platform.Candidate, error) {
	tmpl, err := os.ReadFile(filepath.Join(o.repo, o.template))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "candidates")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	warps := []int{1, 2, 4, 8, 16}
	var out []platform.Candidate
	for i := 0; i < o.n; i++ {
		src := strings.ReplaceAll(string(tmpl), "{{VARIANT}}", fmt.Sprintf("v%d", i))
		src = strings.ReplaceAll(src, "{{WARPS}}", fmt.Sprint(warps[i%len(warps)]))
		p := filepath.Join(dir, fmt.Sprintf("cand%02d.py", i))
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			return nil, err
		}
		out = append(out, platform.Candidate{ID: fmt.Sprintf("cand%02d", i), Path: p, Source: src})
	}
	return out, nil
}

// evaluate verifies and times one candidate, as the optimization loop does.
func evaluate(ctx context.Context, s *worker.Session, c platform.Candidate) (bool, string) {
	v, err := s.Verify(ctx, c)
	if err != nil {
		return false, err.Error()
	}
	if !v.Passed {
		return false, v.Failure + ": " + v.Reason
	}
	if _, err := s.Time(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: c}); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// evaluateFresh is the per-step fresh-process design: a new Python process
// (import torch and triton, build inputs) for the test, another for the timing.
func evaluateFresh(ctx context.Context, task *kerneldir.Task, c platform.Candidate, cfg worker.SessionConfig) (bool, string) {
	s, err := worker.OpenSession(ctx, task, cfg)
	if err != nil {
		return false, err.Error()
	}
	v, err := s.Verify(ctx, c)
	s.Close()
	if err != nil {
		return false, err.Error()
	}
	if !v.Passed {
		return false, v.Failure + ": " + v.Reason
	}
	s, err = worker.OpenSession(ctx, task, cfg)
	if err != nil {
		return false, err.Error()
	}
	defer s.Close()
	if _, err := s.Time(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: c}); err != nil {
		return false, err.Error()
	}
	return true, ""
}

func report(w io.Writer, r results) {
	fmt.Fprintf(w, "# Evaluation engine benchmark\n\n%s, %s, torch %s, triton %s\n\n", r.Date, r.Device, r.Torch, r.Triton)
	fmt.Fprintf(w, "## 1. Wall time per candidate (verify on 3 draws + timing, Triton compile included), %d candidates\n\n", len(r.Warm))
	fmt.Fprintf(w, "| design | median s | mean s | min s | max s |\n|---|---|---|---|---|\n")
	fmt.Fprintf(w, "| warm workers | %.3f | %.3f | %.3f | %.3f |\n", median(r.Warm), mean(r.Warm), minOf(r.Warm), maxOf(r.Warm))
	fmt.Fprintf(w, "| fresh process per step | %.3f | %.3f | %.3f | %.3f |\n\n", median(r.Fresh), mean(r.Fresh), minOf(r.Fresh), maxOf(r.Fresh))
	fmt.Fprintf(w, "fresh / warm (total time): %.2fx; pool start-up (paid once per run): %.2f s\n\n", r.Ratio, r.PoolStartS)
	fmt.Fprintf(w, "## 2. Same target timed 5 times\n\n| problem | target | clock | medians ms | CV of medians | max/min | median in-run CV | late calls |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Stability {
		var ms []string
		for _, m := range s.Medians {
			ms = append(ms, fmt.Sprintf("%.4f", m))
		}
		spread := 0.0
		if len(s.Medians) > 0 && minOf(s.Medians) > 0 {
			spread = maxOf(s.Medians)/minOf(s.Medians) - 1
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.3f%% | +%.2f%% | %.3f%% | %d |\n", s.Problem, s.Target, s.Clock, strings.Join(ms, " "),
			100*s.CV, 100*spread, 100*s.InnerCV, s.Late)
	}
	fmt.Fprintf(w, "\n## 3. kagent's time against Nsight Compute (gpu__time_duration: the median of profiles of one call each, in their own processes)\n\n| problem | kagent median ms | ncu ms (each profile) | difference | profile wall s | kernels |\n|---|---|---|---|---|---|\n")
	for _, n := range r.NCU {
		each := make([]string, len(n.NCUAllMS))
		for i, x := range n.NCUAllMS {
			each[i] = fmt.Sprintf("%.4f", x)
		}
		fmt.Fprintf(w, "| %s | %.4f | %.4f (%s) | %+.2f%% | %.1f | %s |\n", n.Problem, n.KagentMS, n.NCUMS, strings.Join(each, " "), 100*n.Diff, n.ProfileS, strings.Join(n.Kernels, " "))
	}
	fmt.Fprintf(w, "\n## 4. Eager baseline against itself through the interleaved A/B path\n\n| problem | A ms | B ms | A/B |\n|---|---|---|---|\n")
	for _, a := range r.AB {
		fmt.Fprintf(w, "| %s | %.4f | %.4f | %.4f |\n", a.Problem, a.AMS, a.BMS, a.Ratio)
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(w, "\n## Failures\n\n")
		for _, f := range r.Failures {
			fmt.Fprintf(w, "- %s\n", f)
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return sum(xs) / float64(len(xs))
}

func cv(xs []float64) float64 {
	m := mean(xs)
	if m == 0 || len(xs) < 2 {
		return 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v/float64(len(xs)-1)) / m
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}
