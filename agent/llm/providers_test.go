package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeAPI is an httptest server answering each request with the next
// scripted (status, body) pair and logging requests.
type fakeAPI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	script  []fakeReply
	reqs    []*http.Request
	bodies  []map[string]any
	rawBody []string
}

type fakeReply struct {
	status int
	body   string
	header map[string]string
}

func newFakeAPI(t *testing.T, script ...fakeReply) *fakeAPI {
	f := &fakeAPI{script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.bodies = append(f.bodies, m)
		f.rawBody = append(f.rawBody, string(b))
		rep := fakeReply{status: 500, body: `{"error":{"message":"script exhausted"}}`}
		if len(f.script) > 0 {
			rep, f.script = f.script[0], f.script[1:]
		}
		f.mu.Unlock()
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

const anthropicOK = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
 "content":[{"type":"text","text":"hello from claude"}],"stop_reason":"end_turn",
 "usage":{"input_tokens":120,"output_tokens":30}}`

func TestAnthropicMessages(t *testing.T) {
	api := newFakeAPI(t,
		fakeReply{status: 429, body: `{"type":"error","error":{"type":"rate_limit_error","message":"rate limited"}}`, header: map[string]string{"Retry-After": "3"}},
		fakeReply{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		fakeReply{status: 200, body: anthropicOK},
	)
	c, s := newClient(t, Config{Provider: "anthropic", Model: "claude-sonnet-4-5", BaseURL: api.srv.URL + "/v1",
		MaxTokens: 4096, Prices: map[string]Price{"claude-sonnet-4*": {Input: 3, Output: 15}}},
		env{"ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}.opt())
	resp, err := c.Complete(context.Background(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hello from claude" || resp.Usage != (Usage{PromptTokens: 120, CompletionTokens: 30}) || resp.Provider != "anthropic" || resp.FinishReason != "end_turn" {
		t.Errorf("resp = %+v", resp)
	}
	if want := (120*3.0 + 30*15.0) / 1e6; resp.CostUSD != want {
		t.Errorf("cost = %v, want %v", resp.CostUSD, want)
	}
	if api.count() != 3 || len(s.waits()) != 2 || s.waits()[0].Seconds() != 3 {
		t.Errorf("%d requests, waits %v", api.count(), s.waits())
	}
	r, body := api.reqs[2], api.bodies[2]
	if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "sk-ant-test-0123456789" || r.Header.Get("anthropic-version") == "" {
		t.Errorf("request %s headers %v", r.URL.Path, r.Header)
	}
	if body["model"] != "claude-sonnet-4-5" || body["system"] != "You are terse." || body["max_tokens"] != 4096.0 || body["temperature"] != 1.0 {
		t.Errorf("body = %v", api.rawBody[2])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 1 || !strings.Contains(api.rawBody[2], `"text":"hi"`) {
		t.Errorf("messages = %v", msgs)
	}
}

func TestAnthropicThinkingAndNoRetryOn401(t *testing.T) {
	api := newFakeAPI(t,
		fakeReply{status: 200, body: `{"type":"message","role":"assistant","model":"claude-opus-4-1",
		 "content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"answer"}],
		 "stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":900}}`},
		fakeReply{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
		fakeReply{status: 200, body: anthropicOK},
	)
	c, _ := newClient(t, Config{Provider: "claude", Model: "claude-opus-4-1", BaseURL: api.srv.URL, ReasoningEffort: "high",
		MaxTokens: 10000, Temperature: ptr(0.2)}, env{"ANTHROPIC_API_KEY": "sk-ant-test-0123456789"}.opt())
	resp, err := c.Complete(context.Background(), user("think"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "answer" || resp.Usage.CompletionTokens != 900 {
		t.Errorf("resp = %+v", resp)
	}
	th, _ := api.bodies[0]["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != 8000.0 || api.bodies[0]["temperature"] != 1.0 {
		t.Errorf("thinking request = %s", api.rawBody[0])
	}
	_, err = c.Complete(context.Background(), user("again"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Message != "invalid x-api-key" {
		t.Fatalf("err = %v", err)
	}
	if api.count() != 2 {
		t.Errorf("401 was retried: %d requests", api.count())
	}
}

const geminiOK = `{"candidates":[{"content":{"parts":[{"text":"hello from gemini"}],"role":"model"},"finishReason":"STOP","index":0}],
 "usageMetadata":{"promptTokenCount":42,"candidatesTokenCount":7,"totalTokenCount":49}}`

func TestGeminiGenerateContent(t *testing.T) {
	api := newFakeAPI(t,
		fakeReply{status: 503, body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`},
		fakeReply{status: 200, body: geminiOK},
	)
	c, s := newClient(t, Config{Provider: "gemini", Model: "gemini-2.5-pro", BaseURL: api.srv.URL, MaxTokens: 2048},
		env{"GEMINI_API_KEY": "AIza-test-0123456789"}.opt())
	resp, err := c.Complete(context.Background(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hello from gemini" || resp.Usage != (Usage{PromptTokens: 42, CompletionTokens: 7}) || resp.Provider != "google" {
		t.Errorf("resp = %+v", resp)
	}
	// One retry, by our policy only: the Google client's own 503 retry is disarmed.
	if api.count() != 2 || len(s.waits()) != 1 {
		t.Errorf("%d requests, waits %v", api.count(), s.waits())
	}
	r, body := api.reqs[1], api.bodies[1]
	if r.URL.Path != "/v1beta/models/gemini-2.5-pro:generateContent" || r.Header.Get("x-goog-api-key") != "AIza-test-0123456789" {
		t.Errorf("request %s %v", r.URL.Path, r.Header)
	}
	gc, _ := body["generationConfig"].(map[string]any)
	if gc["maxOutputTokens"] != 2048.0 || gc["temperature"] != 1.0 {
		t.Errorf("body = %s", api.rawBody[1])
	}
	if !strings.Contains(api.rawBody[1], "You are terse.") || !strings.Contains(api.rawBody[1], `"hi"`) {
		t.Errorf("messages missing from %s", api.rawBody[1])
	}
}

func TestGeminiNoRetryOn400(t *testing.T) {
	api := newFakeAPI(t, fakeReply{status: 400, body: `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}`})
	c, _ := newClient(t, Config{Provider: "google", Model: "gemini-2.5-flash", BaseURL: api.srv.URL},
		env{"GOOGLE_API_KEY": "AIza-test-0123456789"}.opt())
	_, err := c.Complete(context.Background(), user("hi"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || api.count() != 1 {
		t.Fatalf("err = %v after %d requests", err, api.count())
	}
}

func TestBedrockInvokeModel(t *testing.T) {
	api := newFakeAPI(t,
		fakeReply{status: 429, body: `{"message":"Too many requests"}`},
		fakeReply{status: 200, body: `{"type":"message","role":"assistant","content":[{"type":"text","text":"hello from bedrock"}],
		 "stop_reason":"end_turn","usage":{"input_tokens":11,"output_tokens":3}}`},
	)
	model := "anthropic.claude-3-5-sonnet-20240620-v1:0"
	c, _ := newClient(t, Config{Model: model, BaseURL: api.srv.URL, MaxTokens: 512},
		env{"AWS_ACCESS_KEY_ID": "AKIATESTTESTTEST", "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789", "AWS_REGION": "us-east-1"}.opt())
	resp, err := c.Complete(context.Background(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hello from bedrock" || resp.Usage != (Usage{PromptTokens: 11, CompletionTokens: 3}) || resp.Provider != "bedrock" {
		t.Errorf("resp = %+v", resp)
	}
	r := api.reqs[1]
	if !strings.HasPrefix(r.URL.Path, "/model/") || !strings.HasSuffix(r.URL.Path, "/invoke") ||
		!strings.Contains(r.Header.Get("Authorization"), "AKIATESTTESTTEST") || api.count() != 2 {
		t.Errorf("request %s auth %q, %d requests", r.URL.Path, r.Header.Get("Authorization"), api.count())
	}
}

func TestMissingKeyNamesVariable(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Model: "gpt-4o"}, "OPENAI_API_KEY"},
		{Config{Model: "claude-sonnet-4-5"}, "ANTHROPIC_API_KEY"},
		{Config{Model: "gemini-2.5-pro"}, "GOOGLE_API_KEY"},
		{Config{Provider: "openrouter", Model: "x/y"}, "OPENROUTER_API_KEY"},
		{Config{Provider: "openai", BaseURL: "http://relay", APIKeyEnv: "MY_RELAY_KEY", Model: "m"}, "MY_RELAY_KEY"},
		{Config{Model: "anthropic.claude-3-5-sonnet"}, "AWS_ACCESS_KEY_ID"},
	} {
		_, err := New(tt.cfg, env{}.opt())
		var mk *MissingKeyError
		if !errors.As(err, &mk) || mk.Var != tt.want || !errors.Is(err, ErrMissingKey) || !strings.Contains(err.Error(), "export "+tt.want) {
			t.Errorf("%+v: err = %v, want missing %s", tt.cfg, err, tt.want)
		}
	}
	// A local OpenAI-compatible server needs no key.
	if _, err := New(Config{Provider: "ollama", Model: "qwen3"}, env{}.opt()); err != nil {
		t.Errorf("ollama: %v", err)
	}
}
