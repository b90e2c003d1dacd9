package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/agent/store"
)

// TestLocalSweep runs the six test problems on the cpu platform with the
// fake LLM: each is generated and optimized, 6_Swish's generation fails;
// the results go to the store, results.json, the KernelBench files and a
// report with fast_p and its plot.
func TestLocalSweep(t *testing.T) {
	srv := llmtest.NewServer(t)
	script(t, srv)
	r := newLocal(t, srv)
	dir := filepath.Join(t.TempDir(), "sweep")
	sum, err := Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1, Strategy: r.Config.Strategy,
		Runner: r, Workers: 2, Logger: testLogger(t), Progress: testWriter{t}})
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if sum.Problems != 6 || sum.Ran != 6 || len(sum.Results) != 6 || !sum.Complete {
		t.Fatalf("summary: %d problems, %d ran, %d results, complete %v", sum.Problems, sum.Ran, len(sum.Results), sum.Complete)
	}
	for _, res := range sum.Results {
		if res.ID == 6 {
			if res.Status != StatusFailed || res.Correct || res.Generation == nil || !strings.Contains(res.Error, "all 1 seeds failed") {
				t.Errorf("6_Swish: %s correct=%v error %q, want a failed generation", res.Status, res.Correct, res.Error)
			}
			continue
		}
		if res.Status != StatusDone || !res.Correct || res.Origin != OriginGenerated || res.Kernel == nil || res.Eager == nil ||
			res.SpeedupEager <= 0 || res.RunID != res.Key() || res.LLM.Calls < 4 || res.Representative {
			t.Errorf("%s: %+v", res.Key(), res)
		}
		if res.Generation == nil || res.Generation.Winner != "s1" {
			t.Errorf("%s: generation %+v", res.Key(), res.Generation)
		}
	}
	if n := countPrompts(srv, promptGenerate); n != 6 {
		t.Errorf("%d generate prompts, want 6", n)
	}
	// Two problems at a time: at most two sessions were ever opened, each
	// reopened on the next problems instead of starting workers again.
	r.mu.Lock()
	kept := len(r.idle[""])
	r.mu.Unlock()
	if kept < 1 || kept > 2 {
		t.Errorf("%d sessions kept for 6 problems run two at a time, want 1 or 2", kept)
	}

	// The store: one optimization run per generated problem, finished, and
	// the sweep's results.
	st, err := store.Open(context.Background(), filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, key := range []string{"1_Add", "5_Axpby"} {
		d, err := st.GetRun(context.Background(), key)
		if err != nil || d.Status != store.RunFinished {
			t.Errorf("store run %s: %v %v", key, d, err)
		}
	}

	// results.json, the KernelBench files, the report and its plot.
	res, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil || !res.Complete || len(res.Results) != 6 || res.Shard != "" {
		t.Fatalf("results.json: complete %v, %d results (%v)", res.Complete, len(res.Results), err)
	}
	var evals map[string][]map[string]any
	readJSON(t, filepath.Join(dir, EvalResultsFile), &evals)
	if len(evals) != 6 || evals["1"][0]["correctness"] != true || evals["6"][0]["correctness"] != false || evals["6"][0]["runtime"] != -1.0 {
		t.Errorf("eval_results.json: %v", evals)
	}
	var base map[string]map[string]map[string]any
	readJSON(t, filepath.Join(dir, BaselineEagerFile), &base)
	if len(base["level1"]) != 5 || base["level1"]["1_Add.py"]["mean"].(float64) <= 0 {
		t.Errorf("baseline_time_torch.json: %v", base)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	// fast_0 against torch.compile: 5 of 6 where torch.compile runs (torch 2.x), n/a where it does not.
	if !strings.Contains(string(md), "| 0 | 0.833 (5/6) | 0.833 (5/6) |") && !strings.Contains(string(md), "| 0 | 0.833 (5/6) | n/a |") {
		t.Errorf("report.md lacks the fast_0 row (0.833 against eager, and against torch.compile or n/a)")
	}
	for _, want := range []string{"# kagent sweep: KernelBench level 1, problems all", "## fast_p",
		"6 selected, 5 correct, 1 failed", "Not representative", "| 6 | Swish | failed |", "fast_p.svg", "Geometric-mean speedup"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, PlotFile))
	if err != nil || !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), SeriesEager) {
		t.Errorf("fast_p.svg: %v", err)
	}
	for _, f := range []string{"problems/1_Add/problem.py", "problems/1_Add/input.py", "problems/1_Add/kagent.yaml",
		"problems/1_Add/README.md", "problems/1_Add/result.json", "problems/1_Add/state.json", "runs/1_Add/report.md",
		"runs/1_Add/generate/1_Add-gen1/seed1/attempt0/kernel.py", "sweep.json", FastPFile, BaselineCompileFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("sweep dir lacks %s", f)
		}
	}

	// A second run finds everything finished and only rewrites the outputs.
	before := srv.Count()
	sum2, err := Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1, Strategy: r.Config.Strategy, Runner: r})
	if err != nil || sum2.Ran != 0 || sum2.Skipped != 6 || srv.Count() != before {
		t.Errorf("second run: ran %d, skipped %d, %d more LLM calls (%v)", sum2.Ran, sum2.Skipped, srv.Count()-before, err)
	}
	// Another selection in the same dir is refused.
	sel, _ := ParseSelection("1-2")
	if _, err := Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1, Selection: sel, Strategy: "greedy", Runner: r}); !errors.Is(err, ErrMismatch) {
		t.Errorf("another selection in the same dir: %v, want ErrMismatch", err)
	}
}

// TestResumeAfterKill: a sweep cut off while problem 3 waits for its
// rewrite; the next sweep skips problems 1 and 2, does not generate 3 again
// and resumes its optimization run.
func TestResumeAfterKill(t *testing.T) {
	sel, err := ParseSelection("1-3")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sweep")
	srv := llmtest.NewServer(t)
	slow := reply(t, "3_ReLU.v2.py")
	slow.Delay = time.Minute
	script(t, srv, func(s *llmtest.Server) { s.On("kagent-test kernel: 3_ReLU v1", slow) })
	r := newLocal(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if countPrompts(srv, promptOptimize, "kagent-test kernel: 3_ReLU v1") > 0 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	sum, err := Run(ctx, Options{Dir: dir, Source: testSource, Level: 1, Selection: sel, Strategy: r.Config.Strategy,
		Runner: r, Workers: 1, Logger: testLogger(t)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut sweep: %v, want context.Canceled", err)
	}
	if len(sum.Results) != 2 || sum.Complete {
		t.Fatalf("after the cut: %d results, complete %v; want problems 1 and 2", len(sum.Results), sum.Complete)
	}
	res, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil || len(res.Results) != 2 || res.Complete {
		t.Fatalf("results.json after the cut: %d results, complete %v (%v)", len(res.Results), res.Complete, err)
	}
	if st, ok := readState(dir, Problem{File: "3_ReLU.py"}); !ok || st.Phase != "interrupted" {
		t.Errorf("3_ReLU state %+v", st)
	}

	srv2 := llmtest.NewServer(t)
	script(t, srv2)
	r2 := newLocal(t, srv2)
	sum, err = Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1, Selection: sel, Strategy: r.Config.Strategy,
		Runner: r2, Workers: 2, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("the resumed sweep: %v", err)
	}
	if sum.Skipped != 2 || sum.Ran != 1 || !sum.Complete || sum.Correct() != 3 {
		t.Errorf("resumed: skipped %d, ran %d, complete %v, %d correct", sum.Skipped, sum.Ran, sum.Complete, sum.Correct())
	}
	if n := countPrompts(srv2, promptGenerate); n != 0 {
		t.Errorf("the resumed sweep generated %d kernels, want none", n)
	}
	if n := countPrompts(srv2, promptDiagnose); n != 0 {
		t.Errorf("the resumed sweep diagnosed again %d times; the saved diagnosis should be reused", n)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.GetRun(context.Background(), "3_ReLU")
	if err != nil || d.Status != store.RunFinished || d.Resumes != 1 {
		t.Errorf("3_ReLU's run: %+v (%v), want finished after one resume", d.Run, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ReportFile)); err != nil {
		t.Errorf("no report after the resumed sweep: %v", err)
	}
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestSuppliedKernels: without an LLM, problems with a kernel in --kernels
// are optimized by the tune strategy from it; one without is an error.
func TestSuppliedKernels(t *testing.T) {
	kernels := t.TempDir()
	for dir, src := range map[string]string{"1": "1_Add.v1.py", "02_scale": "2_Scale.v1.py", "7_Other": "1_Add.v1.py"} {
		if err := os.MkdirAll(filepath.Join(kernels, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		b := readFile(t, filepath.Join("testdata", "replies", src))
		if err := os.WriteFile(filepath.Join(kernels, dir, "input.py"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newLocal(t, llmtest.NewServer(t))
	r.LLM, r.Kernels = nil, kernels
	r.Config.Strategy, r.Config.LLM.Model = "tune", ""
	sel, _ := ParseSelection("1-3")
	sum, err := Run(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "sweep"), Source: testSource, Level: 1,
		Selection: sel, Strategy: "tune", Runner: r, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range sum.Results {
		switch res.ID {
		case 1, 2:
			if !res.Correct || res.Origin != OriginSupplied || res.Generation != nil || res.LLM.Calls != 0 {
				t.Errorf("%s: %+v", res.Key(), res)
			}
		case 3:
			if res.Status != StatusError || !strings.Contains(res.Error, "no kernel to start from") {
				t.Errorf("%s: %s %q, want an error", res.Key(), res.Status, res.Error)
			}
		}
	}
	if len(sum.Results) != 3 || sum.Complete {
		t.Errorf("%d results, complete %v", len(sum.Results), sum.Complete)
	}
}

// TestSweepSize: the config's size applies to every problem of a sweep
// (their reports say so), a problem lacking one of its constants fails on
// its own, and a sweep dir started at one size is not resumed at another.
func TestSweepSize(t *testing.T) {
	kernels := t.TempDir()
	for dir, src := range map[string]string{"1": "1_Add.v1.py", "2": "2_Scale.v1.py"} {
		if err := os.MkdirAll(filepath.Join(kernels, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(kernels, dir, "input.py"), readFile(t, filepath.Join("testdata", "replies", src)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newLocal(t, llmtest.NewServer(t))
	r.LLM, r.Kernels = nil, kernels
	r.Config.Strategy, r.Config.LLM.Model, r.Config.Size = "tune", "", "batch_size=8,dim=64"
	sel, _ := ParseSelection("1-2")
	dir := filepath.Join(t.TempDir(), "sweep")
	sum, err := Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1,
		Selection: sel, Strategy: "tune", Size: r.Config.Size, Runner: r, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Results) != 2 {
		t.Fatalf("%d results, want 2", len(sum.Results))
	}
	for _, res := range sum.Results {
		rep := string(readFile(t, filepath.Join(dir, RunsDir, res.Key(), "report.md")))
		if !res.Correct || !strings.Contains(rep, "| timed size | batch_size=8,dim=64 |") {
			t.Errorf("%s: correct %v, report without the size:\n%s", res.Key(), res.Correct, rep)
		}
	}
	_, err = Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1,
		Selection: sel, Strategy: "tune", Runner: r, Logger: testLogger(t)})
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "size") {
		t.Errorf("the same dir at the problems' own size: %v, want ErrMismatch naming the size", err)
	}

	r.Config.Size = "rows=8"
	sum, err = Run(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "sweep"), Source: testSource, Level: 1,
		Selection: sel, Strategy: "tune", Size: r.Config.Size, Runner: r, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range sum.Results {
		if res.Correct || !strings.Contains(res.Error, "rows") {
			t.Errorf("%s at a size naming no constant of it: %s %q, want an error naming rows", res.Key(), res.Status, res.Error)
		}
	}
}
