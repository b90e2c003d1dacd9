package agent

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
)

func TestPromotionRule(t *testing.T) {
	rule := promotionRule{MinPct: 2, NoiseFactor: 3}
	tm := func(ms, cv float64) platform.Timing { return platform.Timing{MedianMS: ms, CV: cv} }
	tests := []struct {
		name       string
		best, cand platform.Timing
		promoted   bool
		reason     string
	}{
		{"clearly faster", tm(10, 0.01), tm(5, 0.01), true, "above"},
		{"faster but within the noise", tm(10, 0.05), tm(8.6, 0.01), false, "within the noise"},
		{"faster by less than min_improvement_pct", tm(10, 0.001), tm(9.9, 0.001), false, "below min_improvement_pct"},
		{"equal", tm(10, 0.01), tm(10, 0.01), false, "slower"},
		{"slower", tm(10, 0.01), tm(12, 0.01), false, "20.0% slower"},
		{"the candidate's noise counts too", tm(10, 0.001), tm(8, 0.1), false, "within the noise"},
		{"no time", tm(0, 0), tm(5, 0), false, "no usable time"},
		{"an outlier does not drown a clear win", platform.Timing{MedianMS: 10, P20MS: 9.9, P80MS: 10.1, CV: 2},
			platform.Timing{MedianMS: 5, P20MS: 4.95, P80MS: 5.05, CV: 0.01}, true, "above"},
		{"spread percentiles are noise", platform.Timing{MedianMS: 10, P20MS: 8, P80MS: 12, CV: 0.01}, tm(8, 0.01), false, "within the noise"},
		{"interleaved pairs cancel shared noise", platform.Timing{MedianMS: 10, P20MS: 5, P80MS: 20, TimesMS: []float64{5, 10, 20, 8, 12, 30}},
			platform.Timing{MedianMS: 8, P20MS: 4, P80MS: 16, TimesMS: []float64{4, 8, 16, 6.4, 9.6, 24}}, true, "20.0% faster"},
		{"pairs that disagree are noise", platform.Timing{MedianMS: 10, TimesMS: []float64{10, 10, 10, 10, 10, 10}},
			platform.Timing{MedianMS: 8, TimesMS: []float64{4, 16, 5, 12, 6, 8}}, false, "within the noise"},
		{"winning every one of 12 noisy pairs beats the noise", platform.Timing{MedianMS: 10, TimesMS: []float64{10, 40, 10, 90, 10, 10, 60, 10, 10, 10, 200, 10}},
			platform.Timing{MedianMS: 5, TimesMS: []float64{5, 5, 9, 5, 5, 9.5, 5, 5, 5, 5, 5, 9.8}}, true, "won 12 of 12 interleaved pairs"},
		{"consistent wins under min_improvement_pct stay out", platform.Timing{MedianMS: 10, TimesMS: []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
			platform.Timing{MedianMS: 9.95, TimesMS: []float64{9.95, 9.95, 9.95, 9.95, 9.95, 9.95, 9.95, 9.95, 9.95, 9.95, 9.95, 9.95}}, false, "below min_improvement_pct"},
		{"9 wins of 12 is not enough against wide noise", platform.Timing{MedianMS: 10, TimesMS: []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
			platform.Timing{MedianMS: 8, TimesMS: []float64{2, 8, 3, 8, 8, 30, 8, 8, 40, 8, 8, 50}}, false, "within the noise"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := rule.decide(tc.best, tc.cand)
			if d.Promoted != tc.promoted || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("promoted %v (%s), want %v (%s)", d.Promoted, d.Reason, tc.promoted, tc.reason)
			}
		})
	}
}

// TestSettledBySolo: a candidate faster than the best by its own timing is
// timed against the best unless that timing leaves it short of
// min_improvement_pct by more than the drift two separate timings may show
// (half the threshold, or the noise where larger).
func TestSettledBySolo(t *testing.T) {
	rule := promotionRule{MinPct: 2, NoiseFactor: 3}
	tm := func(ms, cv float64) platform.Timing { return platform.Timing{MedianMS: ms, CV: cv} }
	for _, tc := range []struct {
		name       string
		rule       promotionRule
		best, cand platform.Timing
		settled    bool
	}{
		{"0.2% faster, quiet timings", rule, tm(3.0, 0.0005), tm(2.994, 0.0005), true},
		{"0.9% faster: 2% needs a drift over 1%", rule, tm(3.0, 0.0005), tm(2.973, 0.0005), true},
		{"1.1% faster: a 1% drift could hide 2%", rule, tm(3.0, 0.0005), tm(2.967, 0.0005), false},
		{"1.3% faster", rule, tm(3.0, 0.0005), tm(2.96, 0.0005), false},
		{"clearly faster", rule, tm(3.0, 0.0005), tm(2.8, 0.0005), false},
		{"0.5% faster in noisy timings", rule, tm(3.0, 0.01), tm(2.985, 0.01), false},
		{"no threshold: every faster candidate is timed", promotionRule{MinPct: 0, NoiseFactor: 3}, tm(3.0, 0.0005), tm(2.999, 0.0005), false},
		{"no time", rule, tm(0, 0), tm(2.9, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := tc.rule.settledBySolo(tc.best, tc.cand)
			if ok != tc.settled {
				t.Fatalf("settled %v, want %v (%+v)", ok, tc.settled, d)
			}
			if ok && (d.Promoted || d.Interleaved || !strings.Contains(d.Reason, "not timed against the best")) {
				t.Errorf("a settled decision: %+v", d)
			}
		})
	}
}

func TestSignTestP(t *testing.T) {
	for _, tc := range []struct {
		k, n int
		want float64
	}{{0, 10, 1}, {10, 10, 1.0 / 1024}, {9, 10, 11.0 / 1024}, {3, 4, 5.0 / 16}, {0, 0, 1}} {
		if got := signTestP(tc.k, tc.n); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("signTestP(%d, %d) = %g, want %g", tc.k, tc.n, got, tc.want)
		}
	}
}

func cand(id string, ms float64, hash string) store.Candidate {
	return store.Candidate{ID: id, SourceHash: hash, Status: store.StatusProfiled, Timing: &platform.Timing{MedianMS: ms}}
}

func TestCandidateIDs(t *testing.T) {
	tests := []struct {
		id                   string
		round, slot, attempt int
		ok                   bool
		dir                  string
	}{
		{"r1c2", 1, 2, 0, true, "round001/cand2"},
		{"r12c3f2", 12, 3, 2, true, "round012/cand3/refine2"},
		{"input", 0, 0, 0, false, "round000/input"},
		{"r1c2x", 0, 0, 0, false, "round000/r1c2x"},
	}
	for _, tc := range tests {
		r, s, a, ok := store.ParseCandidateID(tc.id)
		if ok != tc.ok || ok && (r != tc.round || s != tc.slot || a != tc.attempt) {
			t.Errorf("%s: %d %d %d %v", tc.id, r, s, a, ok)
		}
		if ok && store.CandidateID(r, s, a) != tc.id {
			t.Errorf("%s does not round-trip", tc.id)
		}
		if d := candidateDir(tc.id); d != tc.dir {
			t.Errorf("%s: dir %s, want %s", tc.id, d, tc.dir)
		}
	}
	ids := []string{"r2c1", "r10c1", "r2c1f1", "input", "r2c10", "r2c2"}
	slices.SortFunc(ids, store.CompareIDs)
	if want := []string{"input", "r2c1", "r2c1f1", "r2c2", "r2c10", "r10c1"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("sorted %v, want %v", ids, want)
	}
}

func TestLLMConfig(t *testing.T) {
	temp := 0.3
	high := true
	c := configs.Default()
	c.LLM = configs.LLMConfig{Provider: "vllm", Model: "qwen", BaseURL: "http://h:8000/v1", APIKeyEnv: "K",
		ReasoningEffort: "high", Temperature: &temp, MaxConcurrency: 3, Timeout: time.Minute, MaxRetries: 2,
		PriceInPerM: 1.5, PriceOutPerM: 6, MaxTokens: 1000, Record: "rec"}
	c.Budget = configs.BudgetConfig{MaxCalls: 10, MaxTokens: 5000, MaxUSD: 2, MaxWall: time.Hour}
	c.HighReasoningEffort = &high
	got := LLMConfig(c)
	want := llm.Config{Provider: "vllm", Model: "qwen", BaseURL: "http://h:8000/v1", APIKeyEnv: "K", ReasoningEffort: "high",
		HighReasoningEffort: true, MaxTokens: 1000, Temperature: &temp, Timeout: time.Minute,
		Retry:       llm.RetryPolicy{MaxAttempts: 3},
		Prices:      map[string]llm.Price{"*": {Input: 1.5, Output: 6}},
		Budget:      llm.Limits{MaxCalls: 10, MaxTokens: 5000, MaxUSD: 2, MaxWallTime: time.Hour},
		Concurrency: 3, Record: "rec"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LLMConfig:\n got %+v\nwant %+v", got, want)
	}
	if err := got.Resolve().Validate(); err != nil {
		t.Errorf("the mapped config does not validate: %v", err)
	}
	c.LLM.MaxRetries = 0
	if LLMConfig(c).Retry.MaxAttempts != 1 {
		t.Errorf("max_retries 0 must mean one attempt")
	}
}

// TestConfigProvidersAreLLMProviders: every llm.provider spelling and
// reasoning effort the LLM layer accepts, configs accepts too, and each
// provider resolves to a provider the layer builds.
func TestConfigProvidersAreLLMProviders(t *testing.T) {
	for _, e := range llm.ReasoningEfforts() {
		c := configs.Default()
		c.LLM.Model, c.LLM.ReasoningEffort = "some-model", e
		c.Normalize()
		if err := c.Validate(); err != nil {
			t.Errorf("configs rejects reasoning effort %s: %v", e, err)
		}
	}
	for _, p := range llm.ProviderNames() {
		c := configs.Default()
		c.LLM.Provider, c.LLM.Model = p, "some-model"
		c.Normalize()
		if err := c.Validate(); err != nil {
			t.Errorf("configs rejects %s: %v", p, err)
		}
		lc := LLMConfig(c).Resolve()
		if !slices.Contains(llm.Providers(), lc.Provider) {
			t.Errorf("configs accepts %s, the llm layer resolves it to %q", p, lc.Provider)
		}
	}
}

func TestProgressLines(t *testing.T) {
	r := 2
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Event: EventCandidateVerified, Round: &r, Candidate: "r2c1", Direction: "memory: two passes", Passed: ptr(false), Failure: "correctness", Reason: "max abs err 3"},
			"round 2: r2c1 (memory: two passes) rejected: correctness: max abs err 3"},
		{Event{Event: EventCandidateVerified, Round: &r, Candidate: "r2c4", Direction: "tune: BLOCK=256", Passed: ptr(false), Failure: platform.FailureSlower, Reason: "slower than the best: 5 of 5 quick timed calls"},
			"round 2: r2c4 (tune: BLOCK=256) cut: slower than the best: 5 of 5 quick timed calls"},
		{Event{Event: EventCandidateTimed, Round: &r, Candidate: "r2c1", MedianMS: 1.25, CV: 0.012}, "round 2: r2c1 1.25 ms (cv 1.2%)"},
		{Event{Event: EventCandidateTimed, Round: &r, Candidate: "r2c3", MedianMS: 1.25, CV: 0.012, Budget: "screen 11.1%"}, "round 2: r2c3 1.25 ms (cv 1.2%, screen 11.1%)"},
		{Event{Event: EventRoundFinished, Round: &r, BestID: "r2c1", BestMS: 1.25, SpeedupVsInput: 2, SpeedupVsEager: 1.5, LLMCalls: 3, LLMTokens: 100, LLMCostUSD: 0.5},
			"round 2: best r2c1 1.25 ms (2.00x input, 1.50x eager); llm 3 calls, 100 tokens, $0.50"},
		{Event{Event: EventRoundFinished, Round: &r, BestID: "r2c1", BestMS: 1.25, SpeedupVsInput: 2, LLMCalls: 3, LLMTokens: 100, LLMEstimatedCalls: 3, LLMCostUSD: 0.5},
			"round 2: best r2c1 1.25 ms (2.00x input); llm 3 calls, 100 tokens (estimated), $0.50"},
		{Event{Event: "something_else"}, ""},
	}
	for _, tc := range tests {
		if got := ProgressLine(tc.ev); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestRunInputChecks(t *testing.T) {
	_, err := Run(context.Background(), RunInput{})
	if err == nil || !strings.Contains(err.Error(), "no kernel dir") {
		t.Fatalf("err %v", err)
	}
}

// TestProviderFollowsTheModel: with llm.provider set nowhere, the provider
// follows the model name; a name that says nothing is OpenAI-compatible; a
// provider that is set wins.
func TestProviderFollowsTheModel(t *testing.T) {
	for _, tc := range []struct{ provider, model, baseURL, want string }{
		{"", "claude-sonnet-4-5", "", llm.ProviderAnthropic},
		{"", "gemini-2.5-pro", "", llm.ProviderGoogle},
		{"", "gpt-5", "", llm.ProviderOpenAI},
		{"", "qwen3-coder", "", llm.ProviderOpenAI},
		{"", "claude-sonnet-4-5", "http://relay:8000/v1", llm.ProviderOpenAI},
		{"anthropic", "my-model", "", "anthropic"},
	} {
		c := configs.Default()
		c.LLM.Provider, c.LLM.Model, c.LLM.BaseURL = tc.provider, tc.model, tc.baseURL
		if got := LLMConfig(c).Resolve().Provider; got != tc.want {
			t.Errorf("provider %q, model %q, base URL %q: %q, want %q", tc.provider, tc.model, tc.baseURL, got, tc.want)
		}
	}
}

// TestStepProviders: a step's provider follows its own model name, falls
// back to the default provider where the name says nothing, and a step's
// unset fields are llm:'s.
func TestStepProviders(t *testing.T) {
	for _, tc := range []struct {
		name, provider, baseURL string
		step                    configs.StepConfig
		want                    llm.Config
	}{
		{"model alone", "", "", configs.StepConfig{Model: "gpt-5-mini"},
			llm.Config{Provider: llm.ProviderOpenAI, Model: "gpt-5-mini", APIKeyEnv: "K"}},
		{"inferred over the default", "openai", "", configs.StepConfig{Model: "claude-sonnet-4-5"},
			llm.Config{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5", APIKeyEnv: "K"}},
		{"a name that says nothing", "ollama", "", configs.StepConfig{Model: "qwen3-coder"},
			llm.Config{Provider: llm.ProviderOllama, Model: "qwen3-coder", BaseURL: "http://localhost:11434/v1", APIKeyEnv: "K"}},
		{"behind the default base URL", "", "http://relay/v1", configs.StepConfig{Model: "claude-sonnet-4-5"},
			llm.Config{Provider: llm.ProviderOpenAI, Model: "claude-sonnet-4-5", BaseURL: "http://relay/v1", APIKeyEnv: "K"}},
		{"set provider and key", "", "", configs.StepConfig{Provider: "google", Model: "my-model", APIKeyEnv: "G"},
			llm.Config{Provider: "google", Model: "my-model", APIKeyEnv: "G"}},
		{"effort only", "", "", configs.StepConfig{ReasoningEffort: "low"},
			llm.Config{Provider: llm.ProviderOpenAI, Model: "gpt-5", APIKeyEnv: "K", ReasoningEffort: "low"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := configs.Default()
			c.LLM.Provider, c.LLM.Model, c.LLM.BaseURL, c.LLM.APIKeyEnv = tc.provider, "gpt-5", tc.baseURL, "K"
			c.LLM.Steps = map[string]configs.StepConfig{"refine": tc.step}
			got := LLMConfig(c).Resolve().Steps[llm.PurposeRefine]
			if got.Provider != tc.want.Provider || got.Model != tc.want.Model || got.BaseURL != tc.want.BaseURL ||
				got.APIKeyEnv != tc.want.APIKeyEnv || got.ReasoningEffort != tc.want.ReasoningEffort {
				t.Errorf("step = %+v, want %+v", got, tc.want)
			}
		})
	}
}
