package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cpu"
)

// python is the interpreter with CPU torch the end-to-end tests need.
func python(t testing.TB) string {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if testing.Short() {
		t.Skip("end-to-end runs start the real harness")
	}
	return py
}

// plainTorch is the cpu platform's setting for this package's kernels, which
// are written in plain torch operations (the loop is under test, not Triton).
var plainTorch = map[string]string{cpu.KwargTriton: cpu.TritonOff}

// candidateSource reads a kernel of testdata/candidates.
func candidateSource(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "candidates", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kernelDir copies testdata/relu_scale into a fresh folder.
func kernelDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "relu_scale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"problem.py", "input.py"} {
		b, err := os.ReadFile(filepath.Join("testdata", "relu_scale", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// testConfig is a configuration for quick CPU runs.
func testConfig(strategy string) configs.Config {
	c := configs.Default()
	c.Strategy = strategy
	c.Platform = "cpu"
	c.MaxRounds = 2
	c.NumWorkers = 2
	c.RefineAttempts = 1
	c.BenchmarkWarmup, c.BenchmarkRepeat = 5, 30
	c.LLM.Model = "fake"
	c.LLM.MaxConcurrency = 4
	c.StrategyConfig.MaxNoImprovement = 2
	return c
}

// env is one end-to-end test setup: a kernel dir, a cpu session, a store.
type env struct {
	t        testing.TB
	py       string
	dir      string
	task     *kerneldir.Task
	plat     platform.Platform
	sess     platform.Session
	store    *store.Store
	dbPath   string
	runDir   string
	events   bytes.Buffer
	eventsMu sync.Mutex
}

func newEnv(t testing.TB, dir string) *env {
	t.Helper()
	py := python(t)
	ctx := context.Background()
	e := &env{t: t, py: py, dir: dir}
	task, err := kerneldir.Load(ctx, dir, kerneldir.LoadOptions{Python: py, RequireKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	e.task = task
	p, err := cpu.New(platform.Config{Python: py, WarmupMS: 5, RepMS: 30, Kwargs: plainTorch})
	if err != nil {
		t.Fatal(err)
	}
	p.Spare = false // a spare importing torch would load the two CPUs the timings share
	e.plat = p
	sess, err := p.Open(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	e.sess = sess
	t.Cleanup(func() { sess.Close() })
	e.dbPath = filepath.Join(dir, ".kagent", "history.db")
	st, err := store.Open(ctx, e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	e.store = st
	t.Cleanup(func() { st.Close() })
	e.runDir = filepath.Join(t.TempDir(), "run")
	return e
}

// Write collects --events lines.
func (e *env) Write(b []byte) (int, error) {
	e.eventsMu.Lock()
	defer e.eventsMu.Unlock()
	return e.events.Write(b)
}

func (e *env) eventKinds() map[string]int {
	e.eventsMu.Lock()
	defer e.eventsMu.Unlock()
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(e.events.String()), "\n") {
		var ev Event
		if json.Unmarshal([]byte(line), &ev) == nil {
			out[ev.Event]++
		}
	}
	return out
}

func (e *env) input(cfg configs.Config, client llm.Client) RunInput {
	return RunInput{
		Config: cfg, ConfigYAML: "strategy: " + cfg.Strategy + "\n", Task: e.task, Platform: e.plat, Session: e.sess,
		Store: e.store, LLM: client, Budget: LLMConfig(cfg).Budget, RunDir: e.runDir, Events: e, Progress: testWriter{e.t},
		WriteOptimized: true, Logger: slog.New(slog.NewTextHandler(testWriter{e.t}, nil)),
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// fakeLLM is the fake server scripted for the relu_scale problem: the
// diagnosis names directions by a keyword; each direction's rewrite is a
// kernel of testdata/candidates.
type fakeLLM struct {
	srv    *llmtest.Server
	client llm.Client
}

// diagnosis renders a diagnosis reply naming the given directions.
func diagnosis(summaries ...string) string {
	var bs []string
	for i, s := range summaries {
		bs = append(bs, fmt.Sprintf(`{"rank": %d, "category": "memory", "summary": %q, "root_causes": [{"cause": "too many passes"}], "fixes": [{"fix": "fuse the passes"}]}`, i+1, s))
	}
	return "```json\n{\"bottlenecks\": [" + strings.Join(bs, ", ") + "]}\n```\n"
}

func pyReply(src string) llmtest.Reply {
	return llmtest.Reply{Text: "Here is the kernel.\n\n```python\n" + src + "```\n"}
}

const reflectionReply = `{"was_diagnosis_correct": true, "was_fix_effective": true, "reasoning": "fewer passes", "lessons": ["fuse"], "avoid_patterns": ["python loops"], "try_patterns": ["in-place ops"]}`

// script sets up the fake: diagnoses served in order (the last one again),
// each direction's rewrite and refinements by the direction's keyword.
func script(t testing.TB, srv *llmtest.Server, diagnoses []string, rewrites map[string][]llmtest.Reply, refines map[string][]llmtest.Reply) {
	t.Helper()
	var ds []llmtest.Reply
	for _, d := range diagnoses {
		ds = append(ds, llmtest.Reply{Text: d, PromptTokens: 1000, CompletionTokens: 200})
	}
	srv.On("# Task: diagnose the performance bottlenecks", ds...)
	srv.On("# Task: reflect on an optimization attempt", llmtest.Reply{Text: reflectionReply, PromptTokens: 500, CompletionTokens: 100})
	for dir, rs := range refines {
		srv.On("attempting this optimization: memory: "+dir+".", rs...)
	}
	for dir, rs := range rewrites {
		srv.On("- Summary: "+dir+"\n", rs...)
	}
}

func newFakeLLM(t testing.TB, cfg configs.Config) *fakeLLM {
	t.Helper()
	srv := llmtest.NewServer(t)
	lc := LLMConfig(cfg)
	lc.Provider, lc.BaseURL, lc.Model = "openai", srv.BaseURL(), "fake"
	lc.Retry.MaxAttempts = 1
	client, err := llm.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeLLM{srv: srv, client: client}
}

// countPrompts counts the requests whose prompt contains s.
func (f *fakeLLM) countPrompts(s string) int {
	n := 0
	for _, r := range f.srv.Requests() {
		if strings.Contains(r.Prompt(), s) {
			n++
		}
	}
	return n
}

func mustCandidates(t testing.TB, st *store.Store, runID string) map[string]store.Candidate {
	t.Helper()
	cs, err := st.Candidates(context.Background(), runID, store.CandidateFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Candidate{}
	for _, c := range cs {
		out[c.ID] = c
	}
	return out
}

// byDirection finds the first attempt of the slot that followed a direction.
func byDirection(cs map[string]store.Candidate, round int, summary string) (store.Candidate, bool) {
	for _, c := range cs {
		if c.Round == round && c.RefineAttempt == 0 && strings.HasSuffix(c.Direction, ": "+summary) {
			return c, true
		}
	}
	return store.Candidate{}, false
}

func failureOf(c store.Candidate) string {
	if c.Verdict == nil || c.Verdict.Passed {
		return ""
	}
	return c.Verdict.Failure
}
