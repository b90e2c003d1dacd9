package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A third-party OpenAI-compatible server for tests, beside the fake above:
// @dwmkerr/mock-llm from npm, run as a subprocess. It answers by rules
// (a JMESPath match on the request, the request's place in a sequence)
// with the status and body each rule gives, so the client is tested
// against replies kagent did not write: errors in its format, replies
// without usage. `make npm-mock` installs the version pinned in
// .ci/npm/package-lock.json into .cache/npm.

// Environment variables of the mock server's tests.
const (
	// EnvMockLLM names the mock-llm executable (default: the one `make
	// npm-mock` installs under .cache/npm).
	EnvMockLLM = "KAGENT_MOCK_LLM"
	// EnvRequireNPMMock set to 1 makes a test that cannot start the mock
	// fail instead of skip (CI sets it).
	EnvRequireNPMMock = "KAGENT_REQUIRE_NPM_MOCK"
)

// mockLLMRel is where `make npm-mock` puts the executable, from the module root.
const mockLLMRel = ".cache/npm/node_modules/.bin/mock-llm"

// MockRule is one rule of the mock server: the last rule that matches a
// request answers it.
type MockRule struct {
	// Path is a regular expression over the request path.
	Path string `json:"path"`
	// Method is the HTTP method ("" matches any).
	Method string `json:"method,omitempty"`
	// Match is a JMESPath expression over {body, headers, method, path,
	// query} ("" matches any request).
	Match string `json:"match,omitempty"`
	// Sequence, when set, matches only the request of that index (from 0)
	// among those a sequence rule answered on the path.
	Sequence *int `json:"sequence,omitempty"`
	// Status and Body are the reply. Body is JSON in which {{jmes request
	// <expr>}} is replaced by a value of the request.
	Status int    `json:"-"`
	Body   string `json:"-"`
}

func (r MockRule) MarshalJSON() ([]byte, error) {
	type plain MockRule
	return json.Marshal(struct {
		plain
		Response struct {
			Status  int    `json:"status"`
			Content string `json:"content"`
		} `json:"response"`
	}{plain: plain(r), Response: struct {
		Status  int    `json:"status"`
		Content string `json:"content"`
	}{r.Status, r.Body}})
}

// Seq is a pointer to n, for MockRule.Sequence.
func Seq(n int) *int { return &n }

// ChatBody is a chat completion body with text as the assistant's reply,
// the request's model, and usage when usage is not nil ([prompt,
// completion]).
func ChatBody(text string, usage *[2]int) string {
	b := map[string]any{
		"id": "chatcmpl-mock", "object": "chat.completion", "created": 1700000000, "model": "{{jmes request body.model}}",
		"choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop",
		}},
	}
	if usage != nil {
		b["usage"] = map[string]any{"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": usage[0] + usage[1]}
	}
	out, err := json.Marshal(b)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// ErrorBody is an error body in OpenAI's format.
func ErrorBody(message, typ string) string {
	out, err := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": nil}})
	if err != nil {
		panic(err)
	}
	return string(out)
}

// MockLLM is a running mock-llm server.
type MockLLM struct {
	url  string
	cmd  *exec.Cmd
	out  *tail
	done chan struct{}
	once sync.Once
}

// StartMockLLM starts mock-llm on a free loopback port and stops it when the
// test ends. Without the executable (or node) the test is skipped, or fails
// when KAGENT_REQUIRE_NPM_MOCK=1.
func StartMockLLM(t testing.TB) *MockLLM {
	t.Helper()
	bin, err := mockLLMPath()
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := fmt.Sprintf("the npm mock server (@dwmkerr/mock-llm) cannot run: %v (make npm-mock installs it into .cache/npm; it needs node)", err)
		if os.Getenv(EnvRequireNPMMock) == "1" {
			t.Fatalf("%s; %s=1 requires it", msg, EnvRequireNPMMock)
		}
		t.Skip(msg)
	}
	var last error
	for range 3 { // a port taken between choosing it and the server's listen
		m, err := startMockLLM(bin, t.TempDir())
		if err == nil {
			t.Cleanup(m.Close)
			return m
		}
		last = err
	}
	t.Fatalf("start mock-llm: %v", last)
	return nil
}

// mockLLMPath finds the executable: $KAGENT_MOCK_LLM, else .cache/npm in the
// module root.
func mockLLMPath() (string, error) {
	if p := os.Getenv(EnvMockLLM); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", EnvMockLLM, err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, mockLLMRel)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("no %s", p)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func startMockLLM(bin, dir string) (*MockLLM, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	m := &MockLLM{url: "http://127.0.0.1:" + strconv.Itoa(port), out: &tail{max: 8 << 10}, done: make(chan struct{})}
	// Its working dir is an empty folder, so that it reads no mock-llm.yaml.
	m.cmd = exec.Command(bin)
	m.cmd.Dir = dir
	m.cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT="+strconv.Itoa(port))
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	m.cmd.WaitDelay = 5 * time.Second
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { m.cmd.Wait(); close(m.done) }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.done:
			return nil, fmt.Errorf("mock-llm exited before it was ready: %s", m.out)
		case <-ctx.Done():
			m.Close()
			return nil, fmt.Errorf("mock-llm not ready after 60s: %s", m.out)
		case <-tick.C:
		}
		if resp, err := http.Get(m.url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// BaseURL is the OpenAI-style base URL (URL + "/v1").
func (m *MockLLM) BaseURL() string { return m.url + "/v1" }

// SetRules replaces the server's rules and restarts its sequence counts.
func (m *MockLLM) SetRules(t testing.TB, rules ...MockRule) {
	t.Helper()
	m.config(t, http.MethodDelete, nil) // resets the sequence counts
	body, err := json.Marshal(map[string]any{"rules": rules})
	if err != nil {
		t.Fatal(err)
	}
	m.config(t, http.MethodPost, body)
}

func (m *MockLLM) config(t testing.TB, method string, body []byte) {
	t.Helper()
	req, err := http.NewRequest(method, m.url+"/config", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("mock-llm %s /config: %v", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		t.Fatalf("mock-llm %s /config: %s: %s", method, resp.Status, b)
	}
}

// Output is the end of the server's log (a line per request).
func (m *MockLLM) Output() string { return m.out.String() }

// Close stops the server; it may be called more than once.
func (m *MockLLM) Close() {
	m.once.Do(func() {
		m.cmd.Process.Kill()
		<-m.done
	})
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = w.b[len(w.b)-w.max:]
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(bytes.TrimSpace(w.b))
}
