package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

// countingTransport counts the requests the client sends.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

// TestThirdPartyMock runs the OpenAI-compatible client against a server
// kagent did not write (@dwmkerr/mock-llm from npm, driven by rules): a
// reply is parsed, a 429 is retried, a 500 that persists gives the
// documented error, and a reply without usage gets estimated usage that
// the budget counts.
func TestThirdPartyMock(t *testing.T) {
	mock := llmtest.StartMockLLM(t)
	const chat = "/v1/chat/completions"
	newMockClient := func(t *testing.T, budget Limits) (Client, *sleeps, *countingTransport) {
		ct := &countingTransport{}
		c, s := newClient(t, Config{Provider: "openai", BaseURL: mock.BaseURL(), Model: "mock-coder",
			Retry:  RetryPolicy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: 4 * time.Second},
			Prices: map[string]Price{"mock-coder": {Input: 1, Output: 4}}, Budget: budget}, WithTransport(ct))
		return c, s, ct
	}
	code := "```python\nimport triton\n```"

	t.Run("reply", func(t *testing.T) {
		mock.SetRules(t, llmtest.MockRule{Path: chat, Method: "POST", Status: 200, Body: llmtest.ChatBody(code, &[2]int{120, 30})})
		c, _, _ := newMockClient(t, Limits{})
		resp, err := c.Complete(context.Background(), user("write a kernel"))
		if err != nil {
			t.Fatal(err)
		}
		want := Response{Text: code, Usage: Usage{PromptTokens: 120, CompletionTokens: 30}, Model: "mock-coder",
			Provider: "openai", FinishReason: "stop"}
		if resp.Text != want.Text || resp.Usage != want.Usage || resp.Model != want.Model || resp.Provider != want.Provider ||
			resp.FinishReason != want.FinishReason || resp.CostUSD != (120*1+30*4)/1e6 {
			t.Errorf("resp = %+v\nwant %+v", resp, want)
		}
	})

	t.Run("429 then success", func(t *testing.T) {
		mock.SetRules(t,
			llmtest.MockRule{Path: chat, Sequence: llmtest.Seq(0), Status: 429,
				Body: llmtest.ErrorBody("Rate limit reached for requests", "rate_limit_error")},
			llmtest.MockRule{Path: chat, Sequence: llmtest.Seq(1), Status: 200, Body: llmtest.ChatBody(code, &[2]int{10, 5})},
		)
		c, s, ct := newMockClient(t, Limits{})
		resp, err := c.Complete(context.Background(), user("write a kernel"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != code || ct.n.Load() != 2 || len(s.waits()) != 1 {
			t.Errorf("text %q after %d requests and %d waits; want the reply after 2 requests and 1 wait", resp.Text, ct.n.Load(), len(s.waits()))
		}
	})

	t.Run("500 persists", func(t *testing.T) {
		const msg = "The server had an error while processing your request."
		mock.SetRules(t, llmtest.MockRule{Path: chat, Status: 500, Body: llmtest.ErrorBody(msg, "server_error")})
		c, _, ct := newMockClient(t, Limits{})
		_, err := c.Complete(context.Background(), user("write a kernel"))
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 500 || ae.Message != msg || !ae.Temporary() {
			t.Fatalf("err = %v, want an *APIError 500 with the server's message", err)
		}
		if !strings.Contains(err.Error(), "giving up after 3 attempts") || errors.Is(err, ErrUnreachable) {
			t.Errorf("err = %v, want giving up after max_attempts, not unreachable", err)
		}
		if ct.n.Load() != 3 {
			t.Errorf("%d requests, want max_attempts 3", ct.n.Load())
		}
	})

	for _, tt := range []struct {
		name  string
		usage *[2]int
	}{
		{"no usage", nil},
		{"zero usage", &[2]int{0, 0}},
	} {
		t.Run(tt.name+" is estimated and spends the budget", func(t *testing.T) {
			reply := "Here is the kernel.\n\n```python\n" + strings.Repeat("acc += tl.load(x_ptr + offs, mask=mask)\n", 30) + "```\n"
			mock.SetRules(t, llmtest.MockRule{Path: chat, Status: 200, Body: llmtest.ChatBody(reply, tt.usage)})
			c, _, ct := newMockClient(t, Limits{MaxTokens: 300})
			req := user("write a kernel")
			resp, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := Usage{PromptTokens: EstimatePromptTokens(req.Messages), CompletionTokens: EstimateTokens(reply), Estimated: true}
			if resp.Usage != want || resp.CostUSD != (float64(want.PromptTokens)*1+float64(want.CompletionTokens)*4)/1e6 {
				t.Errorf("usage %+v, cost %v; want %+v", resp.Usage, resp.CostUSD, want)
			}
			_, err = c.Complete(context.Background(), req)
			var be *BudgetExceededError
			if !errors.As(err, &be) || be.Cap != "max_tokens" {
				t.Fatalf("second call: err = %v, want the max_tokens cap", err)
			}
			if st := c.(StatsReporter).Stats(); st.EstimatedCalls != 1 || st.Stopped != "max_tokens" || ct.n.Load() != 1 {
				t.Errorf("stats %+v after %d requests; want 1 estimated call, stopped on max_tokens", st, ct.n.Load())
			}
		})
	}
}
