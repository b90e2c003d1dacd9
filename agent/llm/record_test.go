package llm

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

func conversation() []Request {
	return []Request{
		{Purpose: PurposeDiagnose, Messages: []Message{System("sys"), User("Diagnose kernel A")}},
		{Purpose: PurposeOptimize, Messages: []Message{System("sys"), User("Optimize kernel A for memory")}},
		{Purpose: PurposeOptimize, Messages: []Message{System("sys"), User("Optimize kernel A for memory")}}, // a repeat
		{Purpose: PurposeReflect, Messages: []Message{User("Reflect on attempt 1")}},
	}
}

func TestRecordThenReplay(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.NewServer(t)
	srv.On("Diagnose", llmtest.Reply{Text: `{"bottlenecks": []}`, PromptTokens: 11, CompletionTokens: 22})
	srv.On("Optimize", llmtest.Reply{Text: "```python\nv1\n```"}, llmtest.Reply{Text: "```python\nv2\n```"})
	srv.On("Reflect", llmtest.Reply{Text: `{"lessons": ["x"]}`})
	cfg := Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake", Record: dir,
		Prices: map[string]Price{"fake": {Input: 1, Output: 2}}}
	rec, _ := newClient(t, cfg)
	var recorded []Response
	for _, req := range conversation() {
		resp, err := rec.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		recorded = append(recorded, resp)
	}
	if want := Fingerprint(Request{Model: "fake", Messages: conversation()[0].Messages, Purpose: PurposeDiagnose}); recorded[0].Fingerprint != want {
		t.Errorf("response fingerprint %q, want %q", recorded[0].Fingerprint, want)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 4 {
		t.Fatalf("%d record files: %v", len(files), files)
	}

	srv.Close() // replay needs no server and no key
	rep, _ := newClient(t, Config{Model: "fake", Replay: dir}, env{}.opt())
	for i, req := range conversation() {
		resp, err := rep.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(recorded[i], resp); diff != "" {
			t.Errorf("call %d: replay differs (-recorded +replayed):\n%s", i, diff)
		}
	}
	if recorded[1].Text == recorded[2].Text {
		t.Errorf("repeats of one request should replay in order, got %q twice", recorded[1].Text)
	}
	if diff := cmp.Diff(rec.(StatsReporter).Stats().Totals, rep.(StatsReporter).Stats().Totals,
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".CallTime" }, cmp.Ignore())); diff != "" {
		t.Errorf("accounting differs (-recorded +replayed):\n%s", diff)
	}
}

func TestReplayMissIsClear(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Text: "ok"})
	rec, _ := newClient(t, Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake", Record: dir})
	for _, req := range conversation() {
		if _, err := rec.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	rep, _ := newClient(t, Config{Model: "fake", Replay: dir})
	req := Request{Purpose: PurposeOptimize, Messages: []Message{System("sys"), User("Optimize kernel A for compute")}}
	_, err := rep.Complete(context.Background(), req)
	var miss *ReplayMissError
	if !errors.As(err, &miss) || !errors.Is(err, ErrReplayMiss) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, want := range []string{Fingerprint(Request{Model: "fake", Messages: req.Messages, Purpose: PurposeOptimize}),
		`nearest recorded: optimize-`, `purpose "optimize"`, "message 1 differs at byte 22", `"memory"`, `"compute"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("miss message lacks %q:\n%s", want, msg)
		}
	}
	if _, err := New(Config{Replay: filepath.Join(dir, "nope")}); err == nil {
		t.Error("replay of a missing dir should fail")
	}
}

func TestFingerprint(t *testing.T) {
	a := Request{Model: "m", Messages: []Message{User("x")}, Purpose: PurposeOptimize}
	b := a
	b.MaxTokens, b.Temperature, b.ReasoningEffort = 5, ptr(0.3), "high"
	if Fingerprint(a) != Fingerprint(b) {
		t.Error("sampling settings changed the fingerprint")
	}
	for _, c := range []Request{
		{Model: "m2", Messages: a.Messages, Purpose: a.Purpose},
		{Model: "m", Messages: []Message{User("y")}, Purpose: a.Purpose},
		{Model: "m", Messages: a.Messages, Purpose: PurposeRefine},
	} {
		if Fingerprint(a) == Fingerprint(c) {
			t.Errorf("%+v has the fingerprint of %+v", c, a)
		}
	}
}

// TestNoKeyLeaks runs calls with keys in the environment, recording on and
// debug logs captured, including a provider error that echoes the key, and
// scans every record file and the logs for the key values.
func TestNoKeyLeaks(t *testing.T) {
	keys := map[string]string{
		"OPENAI_API_KEY":        "sk-proj-LEAKCHECK-openai-0123456789abcdef",
		"ANTHROPIC_API_KEY":     "sk-ant-LEAKCHECK-anthropic-0123456789",
		"KAGENT_RELAY_TOKEN":    "relay-LEAKCHECK-token-0123456789",
		"AWS_SECRET_ACCESS_KEY": "aws-LEAKCHECK-secret-0123456789",
	}
	for k, v := range keys {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	srv := llmtest.NewServer(t)
	srv.Enqueue(
		llmtest.Reply{Status: 503, Text: "upstream rejected key " + keys["KAGENT_RELAY_TOKEN"]},
		llmtest.Reply{Text: "ok, your key is " + keys["KAGENT_RELAY_TOKEN"]},
		llmtest.Reply{Status: 401, Text: "Incorrect API key provided: " + keys["KAGENT_RELAY_TOKEN"]},
	)
	srv.Default(llmtest.Reply{Text: "```python\nprint(1)\n```"})
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, _ := newClient(t, Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake", APIKeyEnv: "KAGENT_RELAY_TOKEN", Record: dir},
		WithLogger(logger))
	var errs []string
	for _, req := range append(conversation(), user("echo "+keys["OPENAI_API_KEY"])) {
		if _, err := c.Complete(context.Background(), req); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "401") {
		t.Fatalf("errors = %v, want one 401", errs)
	}
	if got := srv.Requests()[0].Authorization; got != "Bearer "+keys["KAGENT_RELAY_TOKEN"] {
		t.Fatalf("the key was not sent: %q", got)
	}
	if !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("expected redacted log lines, got:\n%s", logs.String())
	}
	scan := map[string]string{"logs": logs.String(), "errors": strings.Join(errs, "\n")}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			scan[p] = string(b)
		}
		return nil
	})
	if len(scan) < 5 {
		t.Fatalf("only %d places scanned", len(scan))
	}
	for where, text := range scan {
		for name, key := range keys {
			if strings.Contains(text, key) {
				t.Errorf("%s leaks %s", where, name)
			}
		}
	}
}
