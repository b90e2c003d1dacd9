package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

func TestReplayMatching(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.NewServer(t)
	srv.On("kernel A", llmtest.Reply{Text: "reply A"})
	srv.On("kernel B", llmtest.Reply{Text: "reply B"})
	rec, err := New(Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "m", Record: dir})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(c Client, purpose Purpose, text string) (string, error) {
		r, err := c.Complete(context.Background(), Request{Purpose: purpose, Messages: []Message{User(text)}})
		return r.Text, err
	}
	for _, p := range []string{"optimize kernel A in 1.25 ms\n```python\nA = 1\n```", "optimize kernel B in 3.5 ms\n```python\nB = 2\n```"} {
		if _, err := ask(rec, PurposeOptimize, p); err != nil {
			t.Fatal(err)
		}
	}
	rp, err := NewReplayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	rp.Match = MatchSimilar
	tests := []struct {
		name, prompt, want string
		purpose            Purpose
		inexact            int
		miss               bool
	}{
		{"exact, another model asked", "optimize kernel A in 1.25 ms\n```python\nA = 1\n```", "reply A", PurposeOptimize, 0, false},
		{"numbers masked", "optimize kernel B in 2.75 ms\n```python\nB = 2\n```", "reply B", PurposeOptimize, 1, false},
		{"nearest by code", "rewrite kernel (B) now\n```python\nB = 2\n```", "reply B", PurposeOptimize, 2, false},
		{"no such purpose", "kernel A", "", PurposeReflect, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ask(rp, tc.purpose, tc.prompt)
			if tc.miss {
				if !errors.Is(err, ErrReplayMiss) {
					t.Fatalf("err %v, want a replay miss", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if rp.Inexact() != tc.inexact {
				t.Errorf("inexact %d, want %d", rp.Inexact(), tc.inexact)
			}
		})
	}
	rp.Match = MatchStrict
	if _, err := ask(rp, PurposeOptimize, "something else entirely"); !errors.Is(err, ErrReplayMiss) {
		t.Errorf("strict replay served an unrelated request: %v", err)
	}
}

func TestNewReplayRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"hello": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewReplayer(dir); err == nil || !strings.Contains(err.Error(), "not a kagent llm record") {
		t.Fatalf("err %v", err)
	}
	if _, err := NewReplayer(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing dir loaded")
	}
}

// TestReplayHandWritten: a hand-written transcript (placeholder prompts, a
// "seq" field) is served in its recorded order, by purpose.
func TestReplayHandWritten(t *testing.T) {
	dir := t.TempDir()
	for i, seq := range []int{2, 1, 3} {
		body := fmt.Sprintf(`{"version": 1, "fingerprint": "%064d", "n": 1, "seq": %d,
			"request": {"purpose": "optimize", "model": "scripted", "messages": [{"role": "user", "content": "(scripted reply for round %d)"}]},
			"response": {"text": "reply %d"}}`, i+1, seq, seq, seq)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("optimize-%d.json", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, match := range []string{MatchPurpose, MatchSimilar} {
		rp, err := NewReplayer(dir)
		if err != nil {
			t.Fatal(err)
		}
		rp.Match = match
		var got []string
		for range 4 {
			r, err := rp.Complete(context.Background(), Request{Purpose: PurposeOptimize, Messages: []Message{User("a real prompt of 1.5 ms")}})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Text)
		}
		if want := "reply 1,reply 2,reply 3,reply 3"; strings.Join(got, ",") != want {
			t.Errorf("%s: served %v, want %s", match, got, want)
		}
		if _, err := rp.Complete(context.Background(), Request{Purpose: PurposeDiagnose, Messages: []Message{User("x")}}); !errors.Is(err, ErrReplayMiss) {
			t.Errorf("%s: a purpose with no record: %v", match, err)
		}
	}
}

// TestReplayRefusesHostileTranscripts: a transcript dir entry that is a
// FIFO or a link out of the dir is refused at once, naming it, instead of
// blocking the replayer or reading another file.
func TestReplayRefusesHostileTranscripts(t *testing.T) {
	for name, mk := range map[string]func(p string) error{
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"symlink": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := mk(filepath.Join(dir, "optimize-0000000000000000-001.json")); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := NewReplayer(dir); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "optimize-0000000000000000-001.json") {
					t.Errorf("NewReplayer = %v", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("NewReplayer blocked")
			}
		})
	}
}
