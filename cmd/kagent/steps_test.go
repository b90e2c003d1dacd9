package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
)

// stepsConfig gives diagnose and optimize/refine models of their own, each
// at its own prices; reflect keeps the default model.
const stepsConfig = `llm:
  model: gpt-5
  price_in_per_m: 1.25
  price_out_per_m: 10
  steps:
    diagnose:
      model: claude-sonnet-4-5
      price_in_per_m: 3
      price_out_per_m: 15
    optimize: {model: gpt-5-mini, price_in_per_m: 0.25, price_out_per_m: 2}
    refine: {model: gpt-5-mini, price_in_per_m: 0.25, price_out_per_m: 2}
`

// TestLLMStepsReplayOnCPU runs a real cpu-platform optimize of the rmsnorm
// example with its transcript and llm.steps: one transcript then simulates
// three models, and report.json, report.md, the summary line and the run
// history split the calls and dollars by model, adding up to the totals.
func TestLLMStepsReplayOnCPU(t *testing.T) {
	dir := tritonKernelDir(t, "rmsnorm")
	// The transcript reports no usage; give every exchange 1000 prompt and
	// 500 completion tokens so each model's prices show.
	names, _ := filepath.Glob(filepath.Join(dir, "transcript", "*.json"))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var ex map[string]any
		if err := json.Unmarshal(b, &ex); err != nil {
			t.Fatal(err)
		}
		ex["response"].(map[string]any)["usage"] = map[string]int{"prompt_tokens": 1000, "completion_tokens": 500}
		b, _ = json.Marshal(ex)
		if err := os.WriteFile(n, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(t.TempDir(), "steps.yaml")
	if err := os.WriteFile(cfg, []byte(stepsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfg, "--max-rounds", "1",
		"--llm-replay", "transcript", "--llm-replay-match", "purpose")
	if r.code != ExitOK && r.code != ExitNoImprovement {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	_, out, _ := strings.Cut(r.stdout, "\nreport: ")
	out, _, _ = strings.Cut(out, "\n")
	out = filepath.Dir(out)

	// USD per call of each model at 1000 prompt and 500 completion tokens.
	perCall := map[string]float64{"claude-sonnet-4-5": (1000*3 + 500*15) / 1e6, "gpt-5-mini": (1000*0.25 + 500*2) / 1e6,
		"gpt-5": (1000*1.25 + 500*10) / 1e6}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		LLM struct {
			Calls   int     `json:"calls"`
			CostUSD float64 `json:"cost_usd"`
			ByModel []struct {
				Model   string  `json:"model"`
				Calls   int     `json:"calls"`
				CostUSD float64 `json:"cost_usd"`
			} `json:"by_model"`
		} `json:"llm"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	calls, cost := 0, 0.0
	for _, m := range rep.LLM.ByModel {
		unit, ok := perCall[m.Model]
		if !ok || m.Calls == 0 || math.Abs(m.CostUSD-unit*float64(m.Calls)) > 1e-6 {
			t.Errorf("report.json: model %q: %d calls $%g, want $%g a call", m.Model, m.Calls, m.CostUSD, unit)
		}
		calls, cost = calls+m.Calls, cost+m.CostUSD
	}
	if len(rep.LLM.ByModel) != len(perCall) || calls != rep.LLM.Calls || math.Abs(cost-rep.LLM.CostUSD) > 1e-6 {
		t.Errorf("report.json: by_model %+v does not add up to %d calls $%g", rep.LLM.ByModel, rep.LLM.Calls, rep.LLM.CostUSD)
	}

	st, err := store.Open(context.Background(), filepath.Join(dir, ".kagent", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), store.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %v, %v", runs, err)
	}
	rows, err := st.LLMCalls(context.Background(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, c := range rows {
		stored[c.Model]++
		if want := map[string]string{"diagnose": "claude-sonnet-4-5", "optimize": "gpt-5-mini", "refine": "gpt-5-mini",
			"reflect": "gpt-5"}[c.Purpose]; c.Model != want {
			t.Errorf("store: a %s call answered by %q, want %q", c.Purpose, c.Model, want)
		}
	}
	for _, m := range rep.LLM.ByModel {
		if stored[m.Model] != m.Calls {
			t.Errorf("store: %d calls of %s, report.json %d", stored[m.Model], m.Model, m.Calls)
		}
	}
	if len(rows) != rep.LLM.Calls {
		t.Errorf("store: %d calls, report.json %d", len(rows), rep.LLM.Calls)
	}

	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	for _, w := range []string{"## LLM models", "`claude-sonnet-4-5`", "`gpt-5-mini`"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	if !strings.Contains(r.stdout, "claude-sonnet-4-5 $0.01") {
		t.Errorf("the summary does not split the cost by model:\n%s", r.stdout)
	}
	show := run(t, dir, "runs", "show", runs[0].ID, "--kernel-dir", ".")
	if !strings.Contains(show.stdout, "gpt-5-mini $") {
		t.Errorf("runs show does not split the cost by model:\n%s", show.stdout)
	}
}
