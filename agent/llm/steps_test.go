package llm

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

// twoStepConfig serves every purpose from gpt-5 on big, and refine and
// reflect from gpt-5-mini on small, each on its own fake server at its own prices.
func twoStepConfig(big, small *llmtest.Server) Config {
	return Config{
		Provider: "openai", BaseURL: big.BaseURL(), Model: "gpt-5", APIKeyEnv: "BIG_KEY",
		Prices: map[string]Price{"*": {Input: 10, Output: 20}},
		Steps: map[Purpose]Config{
			PurposeRefine: {Provider: "openai", BaseURL: small.BaseURL(), Model: "gpt-5-mini", APIKeyEnv: "SMALL_KEY",
				Prices: map[string]Price{"*": {Input: 1, Output: 2}}},
			PurposeReflect: {Provider: "openai", BaseURL: small.BaseURL(), Model: "gpt-5-mini", APIKeyEnv: "SMALL_KEY",
				Prices: map[string]Price{"*": {Input: 1, Output: 2}}, ReasoningEffort: "low"},
		},
	}
}

func TestStepsRouteEachPurposeToItsModel(t *testing.T) {
	big, small := llmtest.NewServer(t), llmtest.NewServer(t)
	big.Default(llmtest.Reply{Text: "big answer", PromptTokens: 1000, CompletionTokens: 1000})
	small.Default(llmtest.Reply{Text: "small answer", PromptTokens: 1000, CompletionTokens: 1000})
	cfg := twoStepConfig(big, small)
	cfg.Budget = Limits{MaxCalls: 4}
	keys := env{"BIG_KEY": "k-big", "SMALL_KEY": "k-small"}
	c, _ := newClient(t, cfg, keys.opt())

	for _, tc := range []struct {
		purpose     Purpose
		model, text string
		cost        float64
	}{
		{PurposeDiagnose, "gpt-5", "big answer", 0.03},
		{PurposeRefine, "gpt-5-mini", "small answer", 0.003},
		{PurposeReflect, "gpt-5-mini", "small answer", 0.003},
		{PurposeOptimize, "gpt-5", "big answer", 0.03},
	} {
		t.Run(string(tc.purpose), func(t *testing.T) {
			resp, err := c.Complete(context.Background(), Request{Messages: []Message{User("go")}, Purpose: tc.purpose})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Model != tc.model || resp.Text != tc.text {
				t.Errorf("answered by %q with %q, want %s", resp.Model, resp.Text, tc.model)
			}
			if d := resp.CostUSD - tc.cost; d > 1e-9 || d < -1e-9 {
				t.Errorf("cost = %g, want %g", resp.CostUSD, tc.cost)
			}
		})
	}
	if big.Count() != 2 || small.Count() != 2 {
		t.Errorf("requests: big %d, small %d; want 2 and 2", big.Count(), small.Count())
	}
	if got := small.Requests()[0].Authorization; got != "Bearer k-small" {
		t.Errorf("the small step sent %q, want its own key", got)
	}
	if got := small.Requests()[1].ReasoningEffort; got != "low" {
		t.Errorf("reflect's reasoning effort = %q, want its step's", got)
	}
	// One budget covers both models.
	_, err := c.Complete(context.Background(), Request{Messages: []Message{User("go")}, Purpose: PurposeRefine})
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("fifth call: err = %v, want the shared max_calls budget", err)
	}
	s := c.(StatsReporter).Stats()
	if s.Calls != 4 || len(s.ByModel) != 2 || s.ByModel["gpt-5"].Calls != 2 || s.ByModel["gpt-5-mini"].Calls != 2 {
		t.Fatalf("stats by model = %+v (total %d calls)", s.ByModel, s.Calls)
	}
	if got := s.ByModel["gpt-5"].CostUSD + s.ByModel["gpt-5-mini"].CostUSD; got-s.CostUSD > 1e-9 || s.CostUSD-got > 1e-9 {
		t.Errorf("costs per model add up to %g, total %g", got, s.CostUSD)
	}
}

func TestStepsRefusedKeyStopsLikeUnreachable(t *testing.T) {
	big, small := llmtest.NewServer(t), llmtest.NewServer(t)
	big.Default(llmtest.Reply{Text: "fine"})
	small.Default(llmtest.Reply{Status: 401, Text: "Incorrect API key provided"})
	c, _ := newClient(t, twoStepConfig(big, small), env{"BIG_KEY": "k-big", "SMALL_KEY": "k-bad"}.opt())
	if _, err := c.Complete(context.Background(), Request{Messages: []Message{User("go")}, Purpose: PurposeDiagnose}); err != nil {
		t.Fatalf("diagnose: %v", err)
	}
	_, err := c.Complete(context.Background(), Request{Messages: []Message{User("go")}, Purpose: PurposeRefine})
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.URL != small.BaseURL() {
		t.Fatalf("refine: err = %v, want an UnreachableError naming %s", err, small.BaseURL())
	}
	if small.Count() != 1 {
		t.Errorf("a refused key was retried: %d requests", small.Count())
	}
}

func TestStepsMissingKeyNamesTheStep(t *testing.T) {
	big, small := llmtest.NewServer(t), llmtest.NewServer(t)
	_, err := New(twoStepConfig(big, small), env{"BIG_KEY": "k-big"}.opt())
	var mk *MissingKeyError
	if !errors.As(err, &mk) || mk.Var != "SMALL_KEY" || mk.Step != PurposeRefine ||
		!strings.Contains(err.Error(), "llm.steps.refine") {
		t.Fatalf("err = %v, want a missing SMALL_KEY for llm.steps.refine", err)
	}
}

func TestStepsUnknownPurposeIsInvalid(t *testing.T) {
	cfg := Config{Provider: "openai", Model: "m", Steps: map[Purpose]Config{"refin": {Model: "m2"}}}
	if err := cfg.Resolve().Validate(); err == nil || !strings.Contains(err.Error(), "llm.steps.refin") {
		t.Fatalf("err = %v", err)
	}
}

func TestStepsReplayAnswersAsTheStepModel(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "rmsnorm", "transcript")
	cfg := Config{Model: "big", Replay: dir, ReplayMatch: MatchPurpose, Prices: map[string]Price{"*": {Input: 10, Output: 20}},
		Steps: map[Purpose]Config{PurposeOptimize: {Model: "small", Replay: dir, Prices: map[string]Price{"*": {Input: 1, Output: 2}}}}}
	c, _ := newClient(t, cfg)
	for p, want := range map[Purpose]string{PurposeDiagnose: "big", PurposeOptimize: "small"} {
		resp, err := c.Complete(context.Background(), Request{Messages: []Message{User("x")}, Purpose: p})
		if err != nil || resp.Model != want {
			t.Errorf("%s: model %q, err %v; want %q", p, resp.Model, err, want)
		}
	}
	if s := c.(StatsReporter).Stats(); len(s.ByModel) != 2 {
		t.Errorf("stats by model = %+v", s.ByModel)
	}
}

// TestStepsRecordTheModelOfEachExchange: a transcript recorded with steps
// holds, per exchange, the model asked and the model that answered.
func TestStepsRecordTheModelOfEachExchange(t *testing.T) {
	big, small := llmtest.NewServer(t), llmtest.NewServer(t)
	big.Default(llmtest.Reply{Text: "big answer"})
	small.Default(llmtest.Reply{Text: "small answer"})
	cfg := twoStepConfig(big, small)
	cfg.Record = t.TempDir()
	c, _ := newClient(t, cfg, env{"BIG_KEY": "k-big", "SMALL_KEY": "k-small"}.opt())
	for _, p := range []Purpose{PurposeDiagnose, PurposeRefine} {
		if _, err := c.Complete(context.Background(), Request{Messages: []Message{User("go")}, Purpose: p}); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := loadExchanges(cfg.Record)
	if err != nil || len(ex) != 2 {
		t.Fatalf("exchanges: %d, %v", len(ex), err)
	}
	for _, e := range ex {
		want := map[Purpose]string{PurposeDiagnose: "gpt-5", PurposeRefine: "gpt-5-mini"}[e.Request.Purpose]
		if e.Request.Model != want || e.Response.Model != want {
			t.Errorf("%s exchange: asked %q, answered by %q; want %q", e.Request.Purpose, e.Request.Model, e.Response.Model, want)
		}
	}
}
