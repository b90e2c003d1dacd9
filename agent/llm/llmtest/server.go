// Package llmtest is a fake OpenAI-compatible chat completions server for
// tests: scripted replies served in order or chosen by a substring of the
// prompt, injected failures (429, 503, 401, a dropped connection), delays, and
// a log of every request. Point an "openai" llm.Config at BaseURL().
//
//	srv := llmtest.NewServer(t)
//	srv.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "0"}, llmtest.Reply{Text: "```python\n...\n```"})
//	srv.On("Diagnose", llmtest.Reply{Text: `{"bottlenecks": [...]}`})
//	cfg := llm.Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake"}
//
// StartMockLLM runs a third-party mock server instead (mockllm.go).
//
// It does not import package llm, so llm's own tests can use it.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Text is the assistant's reply.
	Text string
	// Status, when not 0 or 200, makes this an error reply in OpenAI's error
	// format (429, 503, 401, ...), with Text as the error message.
	Status int
	// RetryAfter sets the Retry-After header ("2", or an HTTP date).
	RetryAfter string
	// Body, when set, is sent as is instead of a generated body.
	Body string
	// Drop closes the connection without answering (a transport error).
	Drop bool
	// PromptTokens and CompletionTokens are the reported usage; 0 means
	// about a token per four bytes.
	PromptTokens, CompletionTokens int
	// NoUsage leaves usage out of the reply, as many OpenAI-compatible
	// servers do.
	NoUsage bool
	// FinishReason defaults to "stop".
	FinishReason string
	// Delay waits before answering, or until the client gives up.
	Delay time.Duration
}

// Message is one chat message as the server received it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is a logged request.
type Request struct {
	Path                string
	Authorization       string
	Model               string
	Messages            []Message
	MaxTokens           int
	MaxCompletionTokens int
	// Temperature is nil when the request carried none.
	Temperature     *float64
	ReasoningEffort string
	// Body is the raw request body.
	Body []byte
	// Reply is what the server answered.
	Reply Reply
}

// Prompt joins the contents of the request's messages.
func (r Request) Prompt() string {
	parts := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

type rule struct {
	substr  string
	replies []Reply
	served  int
}

// Server is the fake. Safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu      sync.Mutex
	queue   []Reply
	rules   []*rule
	def     *Reply
	reqs    []Request
	counter int
}

// NewServer starts a server that is closed when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.srv.Close)
	return s
}

// Start starts a server outside a test (examples, demos); Close stops it.
func Start() *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the server's root URL.
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is the OpenAI-style base URL (URL + "/v1").
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Enqueue appends replies served in order to the next requests, before any
// On rule or the default.
func (s *Server) Enqueue(rs ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Fail enqueues n error replies with the given status.
func (s *Server) Fail(status, n int) {
	for range n {
		s.Enqueue(Reply{Status: status, Text: fmt.Sprintf("injected failure %d", status)})
	}
}

// On answers requests whose prompt contains substr with the replies in order,
// the last one again once they run out. Rules are tried in the order added,
// after the queue is empty.
func (s *Server) On(substr string, rs ...Reply) {
	if len(rs) == 0 {
		panic("llmtest: On needs at least one reply")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{substr: substr, replies: rs})
}

// Default sets the reply to requests nothing else matches. Without one they
// get a 500 naming the unmatched prompt.
func (s *Server) Default(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = &r
}

// Requests returns the log of requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count is the number of requests so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

type chatRequest struct {
	Model               string    `json:"model"`
	Messages            []Message `json:"messages"`
	MaxTokens           int       `json:"max_tokens"`
	MaxCompletionTokens int       `json:"max_completion_tokens"`
	Temperature         *float64  `json:"temperature"`
	ReasoningEffort     string    `json:"reasoning_effort"`
}

func (s *Server) pick(prompt string) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	for _, ru := range s.rules {
		if strings.Contains(prompt, ru.substr) {
			r := ru.replies[min(ru.served, len(ru.replies)-1)]
			ru.served++
			return r
		}
	}
	if s.def != nil {
		return *s.def
	}
	return Reply{Status: http.StatusInternalServerError, Text: "llmtest: no scripted reply for prompt " + clip(prompt, 200)}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake","object":"model"}]}`)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"llmtest: only POST .../chat/completions is served","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		http.Error(w, `{"error":{"message":"llmtest: bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	req := Request{
		Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Model: cr.Model, Messages: cr.Messages,
		MaxTokens: cr.MaxTokens, MaxCompletionTokens: cr.MaxCompletionTokens, Temperature: cr.Temperature,
		ReasoningEffort: cr.ReasoningEffort, Body: body,
	}
	rep := s.pick(req.Prompt())
	req.Reply = rep
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.counter++
	n := s.counter
	s.mu.Unlock()

	if rep.Delay > 0 {
		select {
		case <-time.After(rep.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if rep.Drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if rep.Body != "" {
		w.WriteHeader(status)
		io.WriteString(w, rep.Body)
		return
	}
	if status != http.StatusOK {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": rep.Text, "type": errorType(status), "code": nil,
		}})
		return
	}
	pt, ct := rep.PromptTokens, rep.CompletionTokens
	if pt == 0 {
		pt = len(body)/4 + 1
	}
	if ct == 0 {
		ct = len(rep.Text)/4 + 1
	}
	fr := rep.FinishReason
	if fr == "" {
		fr = "stop"
	}
	out := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": cr.Model,
		"choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": rep.Text}, "finish_reason": fr,
		}},
	}
	if !rep.NoUsage {
		out["usage"] = map[string]any{"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}
	}
	json.NewEncoder(w).Encode(out)
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
