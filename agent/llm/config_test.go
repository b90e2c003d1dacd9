package llm

import (
	"strings"
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	c := Config{OpenAIModel: "gpt-5", HighReasoningEffort: true}.Resolve()
	if c.Model != "gpt-5" || c.ReasoningEffort != "high" || c.Provider != ProviderOpenAI ||
		c.MaxTokens != DefaultMaxTokens || c.Timeout != DefaultTimeout || c.Retry.MaxAttempts != 5 {
		t.Errorf("resolved = %+v", c)
	}
	if c := (Config{Provider: "Ollama", Model: "qwen3"}).Resolve(); c.Provider != ProviderOllama || c.BaseURL != "http://localhost:11434/v1" {
		t.Errorf("ollama = %+v", c)
	}
	if c := (Config{Model: "gpt-4o", ReasoningEffort: "low", HighReasoningEffort: true}).Resolve(); c.ReasoningEffort != "low" {
		t.Errorf("explicit effort overridden: %q", c.ReasoningEffort)
	}
}

func TestInferProvider(t *testing.T) {
	for model, want := range map[string]string{
		"claude-sonnet-4-5": ProviderAnthropic, "gemini-2.5-pro": ProviderGoogle, "gpt-4o": ProviderOpenAI,
		"o3": ProviderOpenAI, "o4-mini": ProviderOpenAI, "anthropic.claude-3-5-sonnet-20240620-v1:0": ProviderBedrock,
		"us.anthropic.claude-sonnet-4-20250514-v1:0": ProviderBedrock, "qwen3-coder": "", "": "",
	} {
		if got := InferProvider(model, ""); got != want {
			t.Errorf("InferProvider(%q) = %q, want %q", model, got, want)
		}
	}
	if got := InferProvider("claude-opus-4.5", "http://relay:8080/v1"); got != ProviderOpenAI {
		t.Errorf("a base url means openai-compatible, got %q", got)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "llm.model is not set"},
		{Config{Model: "mystery"}, "cannot infer the llm provider"},
		{Config{Provider: "cohere", Model: "x"}, "unknown llm provider"},
		{Config{Model: "gpt-4o", ReasoningEffort: "extreme"}, "reasoning_effort"},
		{Config{Model: "gpt-4o", Temperature: ptr(3.0)}, "temperature"},
		{Config{Model: "gpt-4o", Record: "a", Replay: "b"}, "exclusive"},
		{Config{Model: "gpt-4o", Budget: Limits{MaxCalls: -1}}, "must not be negative"},
		{Config{Model: "gpt-4o", Retry: RetryPolicy{BaseDelay: time.Minute, MaxDelay: time.Second}}, "max_delay"},
	}
	for _, tt := range tests {
		err := tt.cfg.Resolve().Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if err := (Config{Replay: "dir"}).Resolve().Validate(); err != nil {
		t.Errorf("replay needs no model or provider: %v", err)
	}
}

func TestCost(t *testing.T) {
	c := Config{Prices: map[string]Price{"gpt-5": {1.25, 10}, "gpt-5*": {9, 9}, "*": {100, 100}}}
	if got := c.Cost("gpt-5", Usage{PromptTokens: 1_000_000, CompletionTokens: 100_000}); got != 2.25 {
		t.Errorf("exact price: %v", got)
	}
	if got := c.Cost("gpt-5-mini", Usage{PromptTokens: 1_000_000}); got != 9 {
		t.Errorf("longest pattern: %v", got)
	}
	if got := (Config{}).Cost("x", Usage{PromptTokens: 5, CompletionTokens: 5}); got != 0 {
		t.Errorf("no price: %v", got)
	}
}

func TestRedactor(t *testing.T) {
	r := EnvRedactor(func(k string) string { return map[string]string{"X": "explicit-secret-1"}[k] },
		[]string{"MY_API_KEY=abcdefgh12345", "GH_TOKEN=ghp_tokenvalue", "PATH=/usr/bin:/bin", "SHORT_TOKEN=1"}, "X")
	in := "a abcdefgh12345 b ghp_tokenvalue c explicit-secret-1 d /usr/bin:/bin 1"
	want := "a [REDACTED] b [REDACTED] c [REDACTED] d /usr/bin:/bin 1"
	if got := r.String(in); got != want {
		t.Errorf("got %q", got)
	}
	var nilR *Redactor
	if nilR.String("x") != "x" {
		t.Error("nil redactor changed text")
	}
}
