package generate

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cpu"
)

// Markers of the two prompts a generation sends.
const (
	generatePrompt = "# Task: write a Triton implementation"
	refinePrompt   = "# Task: fix a Triton kernel"
)

func python(t testing.TB) string {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if testing.Short() {
		t.Skip("generation starts the real harness")
	}
	return py
}

func kernel(t testing.TB, name string) llmtest.Reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kernels", name))
	if err != nil {
		t.Fatal(err)
	}
	return llmtest.Reply{Text: "Here is the kernel.\n\n```python\n" + string(b) + "```\n"}
}

// setup is a prepared kernel dir for 1_Add with a cpu session and a store.
type setup struct {
	in  Input
	srv *llmtest.Server
	st  *store.Store
	dir string
}

func newSetup(t *testing.T, seeds, refine int) *setup {
	t.Helper()
	py := python(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "add")
	problem := filepath.Join("testdata", "1_Add.py")
	if err := Prepare(dir, problem, ""); err != nil {
		t.Fatal(err)
	}
	task, err := kerneldir.Load(ctx, dir, kerneldir.LoadOptions{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cpu.New(platform.Config{Python: py, Kwargs: map[string]string{cpu.KwargTriton: cpu.TritonOff}}) // plain torch kernels
	if err != nil {
		t.Fatal(err)
	}
	p.Spare = false
	sess, err := p.Open(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	st, err := store.Open(ctx, filepath.Join(dir, ".kagent", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := llmtest.NewServer(t)
	client, err := llm.New(llm.Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake", Concurrency: 4,
		Retry: llm.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := configs.Default()
	cfg.RefineAttempts = refine
	cfg.LLM.Model = "fake"
	return &setup{srv: srv, st: st, dir: dir, in: Input{
		Config: cfg, Task: task, Platform: p, Session: sess, LLM: client, Seeds: seeds, Store: st,
		Progress: testWriter{t}, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func (s *setup) count(substr string) int {
	n := 0
	for _, r := range s.srv.Requests() {
		if strings.Contains(r.Prompt(), substr) {
			n++
		}
	}
	return n
}

// TestFirstSeedFailsSecondWins: of two seeds, the first reply is a wrong
// kernel (rejected by correctness, then refined with that failure) and the
// second, arriving later, a correct one, which wins; the kernel dir is then
// ready for optimize.
func TestFirstSeedFailsSecondWins(t *testing.T) {
	s := newSetup(t, 2, 1)
	good := kernel(t, "good.py")
	good.Delay = 2 * time.Second // the wrong kernel is verified first
	s.srv.On(generatePrompt, kernel(t, "broken.py"), good)
	s.srv.On(refinePrompt, kernel(t, "broken.py"))
	ctx := context.Background()
	res, err := Run(ctx, s.in)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	var winner, loser SeedOutcome
	for _, o := range res.Seeds {
		if o.Passed {
			winner = o
		} else {
			loser = o
		}
	}
	if winner.Seed == 0 || loser.Seed == 0 {
		t.Fatalf("want one passing and one failing seed, got %+v", res.Seeds)
	}
	if res.Winner.Seed != winner.Seed || res.Winner.Attempt != 0 || !res.Verdict.Passed {
		t.Errorf("winner %+v, want the first attempt of seed %d", res.Winner, winner.Seed)
	}
	if len(loser.Attempts) == 0 || loser.Attempts[0].Failure != "correctness" {
		t.Fatalf("losing seed %+v: want its first kernel rejected by correctness", loser)
	}
	// The refinement carried the named failure and its reason.
	var refine string
	for _, r := range s.srv.Requests() {
		if strings.Contains(r.Prompt(), refinePrompt) {
			refine = r.Prompt()
		}
	}
	if !strings.Contains(refine, "correctness: "+loser.Attempts[0].Reason) {
		t.Errorf("the refine prompt lacks the failure %q", "correctness: "+loser.Attempts[0].Reason)
	}
	// Seeds are sampled at KernelAgent's temperature.
	for _, r := range s.srv.Requests() {
		if r.Temperature == nil || *r.Temperature != DefaultTemperature {
			t.Errorf("request temperature %v, want %v", r.Temperature, DefaultTemperature)
		}
	}

	// The kernel dir is ready for optimize.
	if err := WriteKernelDir(s.dir, filepath.Join("testdata", "1_Add.py"), res); err != nil {
		t.Fatal(err)
	}
	task, err := kerneldir.Load(ctx, s.dir, kerneldir.LoadOptions{Python: python(t), RequireKernel: true})
	if err != nil {
		t.Fatalf("load the generated kernel dir: %v", err)
	}
	if task.Entry != kerneldir.EntryModelNew || task.KernelSource != res.Source || task.Name != "1_Add" || task.Options.TF32 != "forbid" {
		t.Errorf("kernel dir: entry %s, name %s, tf32 %q", task.Entry, task.Name, task.Options.TF32)
	}
	readme, _ := os.ReadFile(filepath.Join(s.dir, "README.md"))
	if !strings.Contains(string(readme), "Generated by `kagent generate` from 1_Add.py") {
		t.Errorf("README.md: %s", readme)
	}

	// The store holds the generation as a finished run with every attempt.
	d, err := s.st.GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != store.RunFinished || d.Strategy != Strategy || !strings.Contains(d.StopReason, "passed") {
		t.Errorf("run %s: %s %s (%s)", d.ID, d.Status, d.Strategy, d.StopReason)
	}
	byID := map[string]store.Candidate{}
	for _, c := range d.Candidates {
		byID[c.ID] = c
	}
	if c := byID[res.Winner.ID]; c.Status != store.StatusVerified {
		t.Errorf("winner %s is %s in the store", res.Winner.ID, c.Status)
	}
	if c := byID[loser.Attempts[0].ID]; c.Status != store.StatusRejected || c.Verdict == nil || c.Verdict.Failure != "correctness" {
		t.Errorf("loser's first attempt in the store: %+v", c)
	}
	for _, c := range d.Candidates {
		if c.Status == store.StatusProposed {
			t.Errorf("candidate %s left proposed", c.ID)
		}
	}
	calls, err := s.st.LLMCalls(ctx, res.RunID)
	if err != nil || len(calls) != s.srv.Count() || res.Usage.Calls != s.srv.Count() {
		t.Errorf("recorded %d calls (usage %d), the server saw %d (%v)", len(calls), res.Usage.Calls, s.srv.Count(), err)
	}
	for _, f := range []string{"seed1/attempt0/generate.prompt.md", "seed1/attempt0/generate.reply.md", "seed1/attempt0/kernel.py",
		"seed1/attempt0/verdict.json", "result.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("artifacts lack %s", f)
		}
	}
}

// TestAllSeedsFail: wrong kernels, then a reply without code: the error
// lists each seed's last failure.
func TestAllSeedsFail(t *testing.T) {
	s := newSetup(t, 2, 1)
	s.srv.On(generatePrompt, kernel(t, "broken.py"))
	s.srv.On(refinePrompt, llmtest.Reply{Text: "I am not sure how to fix this."})
	res, err := Run(context.Background(), s.in)
	var af *AllFailedError
	if !errors.As(err, &af) || !errors.Is(err, ErrAllFailed) {
		t.Fatalf("err %v, want *AllFailedError", err)
	}
	if len(af.Seeds) != 2 {
		t.Fatalf("seeds %+v", af.Seeds)
	}
	for _, o := range af.Seeds {
		if len(o.Attempts) != 2 || o.Attempts[0].Failure != "correctness" || o.Attempts[1].Failure != failExtract {
			t.Errorf("seed %d: %+v, want correctness then extract", o.Seed, o.Attempts)
		}
	}
	for _, want := range []string{"all 2 seeds failed", "seed 1: extract:", "seed 2: extract:", "refine attempts spent"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if s.count(generatePrompt) != 2 || s.count(refinePrompt) != 2 {
		t.Errorf("generate %d, refine %d requests; want 2 and 2", s.count(generatePrompt), s.count(refinePrompt))
	}
	d, err := s.st.GetRun(context.Background(), res.RunID)
	if err != nil || d.Status != store.RunFinished || !strings.Contains(d.StopReason, "all 2 seeds failed") {
		t.Errorf("store run: %+v %v", d, err)
	}
	if HasKernel(s.dir) {
		t.Error("a failed generation left a kernel in the kernel dir")
	}
}

func TestInputErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want error
	}{
		{"no llm", Input{}, ErrNoLLM},
		{"no task", Input{LLM: llmFunc(nil)}, ErrInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), tc.in); !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
		})
	}
}

type llmFunc func(context.Context, llm.Request) (llm.Response, error)

func (f llmFunc) Complete(ctx context.Context, r llm.Request) (llm.Response, error) { return f(ctx, r) }

func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	problem := filepath.Join("testdata", "1_Add.py")
	if err := Prepare(dir, problem, "add"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kagent.yaml"))
	if err != nil || !strings.Contains(string(b), `name: "add"`) {
		t.Fatalf("kagent.yaml: %s %v", b, err)
	}
	if err := Prepare(dir, problem, "add"); err != nil {
		t.Errorf("preparing again: %v", err)
	}
	other := filepath.Join(t.TempDir(), "2_Other.py")
	if err := os.WriteFile(other, []byte("class Model: pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(dir, other, ""); !errors.Is(err, kerneldir.ErrInvalid) {
		t.Errorf("another problem in the same dir: %v, want kerneldir.ErrInvalid", err)
	}
}
