package llmtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, s *Server, prompt string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []Message{{Role: "user", Content: prompt}}, "max_tokens": 9})
	resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message Message `json:"message"`
		} `json:"choices"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	if len(out.Choices) > 0 {
		return resp.StatusCode, out.Choices[0].Message.Content
	}
	return resp.StatusCode, out.Error.Message
}

func TestScript(t *testing.T) {
	s := NewServer(t)
	s.Fail(429, 1)
	s.Enqueue(Reply{Text: "first"})
	s.On("diagnose", Reply{Text: "d1"}, Reply{Text: "d2"})
	s.Default(Reply{Text: "default"})

	for _, tt := range []struct {
		prompt string
		status int
		text   string
	}{
		{"diagnose", 429, "injected failure 429"},
		{"diagnose", 200, "first"},
		{"please diagnose this", 200, "d1"},
		{"diagnose", 200, "d2"},
		{"diagnose", 200, "d2"},
		{"other", 200, "default"},
	} {
		status, text := post(t, s, tt.prompt)
		if status != tt.status || text != tt.text {
			t.Errorf("%q: %d %q, want %d %q", tt.prompt, status, text, tt.status, tt.text)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 6 || reqs[2].Prompt() != "please diagnose this" || reqs[2].MaxTokens != 9 || reqs[0].Reply.Status != 429 {
		t.Errorf("log = %+v", reqs)
	}
}

func TestUnscriptedIsAClearError(t *testing.T) {
	s := NewServer(t)
	status, text := post(t, s, "hello")
	if status != 500 || !strings.Contains(text, "no scripted reply") || !strings.Contains(text, "hello") {
		t.Errorf("%d %q", status, text)
	}
}
