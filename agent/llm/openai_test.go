package llm

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

func TestOpenAICompatibleRequestShape(t *testing.T) {
	tests := []struct {
		name            string
		model           string
		effort          string
		temp            *float64
		wantMaxTokens   int
		wantMaxComplete int
		wantTemp        *float64
		wantEffort      string
	}{
		{name: "chat model", model: "gpt-4o", effort: "high", temp: ptr(0.7), wantMaxTokens: 1000, wantTemp: ptr(0.7)},
		{name: "gpt-5 takes max_completion_tokens and no temperature", model: "gpt-5", effort: "high", temp: ptr(0.7),
			wantMaxComplete: 1000, wantEffort: "high"},
		{name: "o-series", model: "o3-mini", effort: "medium", temp: ptr(0.2), wantMaxComplete: 1000, wantEffort: "medium"},
		{name: "vendor-prefixed reasoning model", model: "openai/gpt-5.2", wantMaxComplete: 1000},
		{name: "zero temperature is sent", model: "qwen3-coder", temp: ptr(0.0), wantMaxTokens: 1000, wantTemp: ptr(0.0)},
		{name: "no temperature", model: "llama-3.3-70b", wantMaxTokens: 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Default(llmtest.Reply{Text: "ok", PromptTokens: 1000, CompletionTokens: 500})
			c, _ := newClient(t, Config{
				Provider: "openai", BaseURL: srv.BaseURL(), Model: tt.model, APIKeyEnv: "RELAY_KEY",
				ReasoningEffort: tt.effort, Temperature: tt.temp, MaxTokens: 1000,
				Prices: map[string]Price{"*": {Input: 2, Output: 8}},
			}, env{"RELAY_KEY": "relay-secret-123456"}.opt())
			resp, err := c.Complete(context.Background(), user("hello"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "ok" || resp.Usage != (Usage{PromptTokens: 1000, CompletionTokens: 500}) || resp.Provider != "openai" {
				t.Errorf("resp = %+v", resp)
			}
			if want := (1000*2.0 + 500*8.0) / 1e6; math.Abs(resp.CostUSD-want) > 1e-12 {
				t.Errorf("cost = %v, want %v", resp.CostUSD, want)
			}
			got := srv.Requests()[0]
			if got.Authorization != "Bearer relay-secret-123456" {
				t.Errorf("authorization = %q", got.Authorization)
			}
			if got.Model != tt.model || got.MaxTokens != tt.wantMaxTokens || got.MaxCompletionTokens != tt.wantMaxComplete ||
				got.ReasoningEffort != tt.wantEffort {
				t.Errorf("request = model %q max_tokens %d max_completion_tokens %d effort %q", got.Model, got.MaxTokens,
					got.MaxCompletionTokens, got.ReasoningEffort)
			}
			switch {
			case tt.wantTemp == nil && got.Temperature != nil:
				t.Errorf("temperature sent: %v", *got.Temperature)
			case tt.wantTemp != nil && (got.Temperature == nil || math.Abs(*got.Temperature-*tt.wantTemp) > 1e-6):
				t.Errorf("temperature = %v, want %v", got.Temperature, *tt.wantTemp)
			}
			if len(got.Messages) != 2 || got.Messages[0].Role != "system" || got.Messages[1].Content != "hello" {
				t.Errorf("messages = %+v", got.Messages)
			}
		})
	}
}

func TestOpenAIEmptyReplyKeepsUsage(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Text: "", FinishReason: "length", PromptTokens: 10, CompletionTokens: 4000})
	c, _ := newClient(t, Config{Provider: "vllm", BaseURL: srv.BaseURL(), Model: "m", Prices: map[string]Price{"m": {1, 1}}})
	resp, err := c.Complete(context.Background(), user("x"))
	if err == nil || !strings.Contains(err.Error(), "empty reply") || !strings.Contains(err.Error(), "length") {
		t.Fatalf("err = %v", err)
	}
	if resp.Usage.CompletionTokens != 4000 {
		t.Errorf("usage lost: %+v", resp.Usage)
	}
	if st := c.(StatsReporter).Stats(); st.CompletionTokens != 4000 || st.Failed != 1 {
		t.Errorf("stats = %+v", st)
	}
	if srv.Count() != 1 {
		t.Errorf("an empty reply was retried: %d requests", srv.Count())
	}
}

func TestDefaultsFillRequest(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Text: "ok"})
	c, _ := newClient(t, Config{BaseURL: srv.BaseURL(), OpenAIModel: "gpt-5", HighReasoningEffort: true})
	if _, err := c.Complete(context.Background(), user("x")); err != nil {
		t.Fatal(err)
	}
	got := srv.Requests()[0]
	if got.Model != "gpt-5" || got.ReasoningEffort != "high" || got.MaxCompletionTokens != DefaultMaxTokens {
		t.Errorf("request = %+v", got)
	}
	// A request's own settings win.
	if _, err := c.Complete(context.Background(), Request{Messages: []Message{User("y")}, Model: "o4-mini", MaxTokens: 7, ReasoningEffort: "low"}); err != nil {
		t.Fatal(err)
	}
	got = srv.Requests()[1]
	if got.Model != "o4-mini" || got.ReasoningEffort != "low" || got.MaxCompletionTokens != 7 {
		t.Errorf("request = %+v", got)
	}
}
