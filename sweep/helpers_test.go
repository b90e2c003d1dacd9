package sweep

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cpu"
	"github.com/kagent-kernels/kagent/search"
	"github.com/kagent-kernels/kagent/search/tune"
)

// testSource is the folder of test problems (a KernelBench checkout's shape).
var testSource = filepath.Join("testdata", "kernelbench")

// Markers of the prompts the fake LLM tells apart.
const (
	promptGenerate = "# Task: write a Triton implementation"
	promptOptimize = "# Task: make this Triton kernel faster"
	promptDiagnose = "# Task: diagnose the performance bottlenecks"
	promptReflect  = "# Task: reflect on an optimization attempt"
	promptRefine   = "# Task: fix a Triton kernel"
)

// python is the interpreter with CPU torch the end-to-end tests need.
func python(t testing.TB) string {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	if testing.Short() {
		t.Skip("end-to-end sweeps start the real harness")
	}
	return py
}

// reply is a scripted reply holding testdata/replies/<name>.
func reply(t testing.TB, name string) llmtest.Reply {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "replies", name))
	if err != nil {
		t.Fatal(err)
	}
	return llmtest.Reply{Text: "Here is the kernel.\n\n```python\n" + string(b) + "```\n", PromptTokens: 800, CompletionTokens: 200}
}

const (
	diagnosisReply = "```json\n" + `{"bottlenecks": [{"rank": 1, "category": "memory", "summary": "two passes over the data", ` +
		`"root_causes": [{"cause": "an intermediate tensor"}], "fixes": [{"fix": "write the result in place"}]}]}` + "\n```\n"
	reflectionReply = `{"was_diagnosis_correct": true, "was_fix_effective": true, "reasoning": "one pass fewer", "lessons": ["in place"]}`
)

// script teaches the fake LLM the test problems: the generate prompt of
// problem KEY gets replies/KEY.v1.py, the optimize (and refine) prompt of a
// kernel vN gets replies/KEY.v2.py (KEY.v1.py again when there is no v2).
// Diagnose and reflect prompts get a fixed reply. The rules of extra are
// tried before the kernel and problem rules.
func script(t testing.TB, srv *llmtest.Server, extra ...func(*llmtest.Server)) {
	t.Helper()
	srv.On(promptDiagnose, llmtest.Reply{Text: diagnosisReply, PromptTokens: 1000, CompletionTokens: 150})
	srv.On(promptReflect, llmtest.Reply{Text: reflectionReply, PromptTokens: 500, CompletionTokens: 80})
	for _, f := range extra {
		f(srv)
	}
	entries, err := os.ReadDir(filepath.Join(testSource, "level1"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range entries {
		keys = append(keys, strings.TrimSuffix(e.Name(), ".py"))
	}
	for _, key := range keys {
		next := key + ".v2.py"
		if _, err := os.Stat(filepath.Join("testdata", "replies", next)); err != nil {
			next = key + ".v1.py"
		}
		srv.On(fmt.Sprintf("kagent-test kernel: %s v1", key), reply(t, next))
	}
	for _, key := range keys {
		srv.On(fmt.Sprintf("kagent-test problem: %s", key), reply(t, key+".v1.py"))
	}
}

// testConfig is a configuration for quick CPU sweeps.
func testConfig() configs.Config {
	c := configs.Default()
	c.Strategy = configs.StrategyGreedy
	c.Platform = "cpu"
	c.MaxRounds = 1
	c.NumWorkers = 1
	c.RefineAttempts = 1
	c.BenchmarkWarmup, c.BenchmarkRepeat = 5, 30
	c.LLM.Model = "fake"
	c.StrategyConfig.MaxNoImprovement = 1
	return c
}

// newLocal builds the Local runner on the cpu platform with a client of srv.
func newLocal(t testing.TB, srv *llmtest.Server) *Local {
	t.Helper()
	py := python(t)
	cfg := testConfig()
	p, err := cpu.New(platform.Config{Python: py, WarmupMS: cfg.BenchmarkWarmup, RepMS: cfg.BenchmarkRepeat,
		Kwargs: map[string]string{cpu.KwargTriton: cpu.TritonOff}}) // plain torch kernels
	if err != nil {
		t.Fatal(err)
	}
	p.Spare = false // a spare importing torch would load the two CPUs the timings share
	lc := agent.LLMConfig(cfg)
	lc.Provider, lc.BaseURL, lc.Model, lc.Concurrency = "openai", srv.BaseURL(), "fake", 4
	lc.Retry.MaxAttempts = 1
	client, err := llm.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	l := &Local{Config: cfg, ConfigYAML: "strategy: greedy\n", Platform: p, LLM: client, Python: py, Seeds: 1,
		Tuner: search.KnobTuner{Finder: tune.Finder{Python: py}}}
	t.Cleanup(func() { l.Close() })
	return l
}

// countPrompts counts the requests whose prompt holds every substring.
func countPrompts(srv *llmtest.Server, substrs ...string) int {
	n := 0
next:
	for _, r := range srv.Requests() {
		for _, s := range substrs {
			if !strings.Contains(r.Prompt(), s) {
				continue next
			}
		}
		n++
	}
	return n
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// withoutTimestamp drops the report's timestamp line.
func withoutTimestamp(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, TimestampPrefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
