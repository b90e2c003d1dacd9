package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-dev/kagent/agent/llm"
	"github.com/kagent-dev/kagent/agent/llm/llmtest"
	"github.com/kagent-dev/kagent/configs"
)

// TestRecordReplay drives a full run against the fake server while
// recording, then the same run again from the recording alone: the prompts
// differ in their measured times, and the replay still serves every call.
func TestRecordReplay(t *testing.T) {
	recDir := filepath.Join(t.TempDir(), "transcript")
	cfg := testConfig(configs.StrategyGreedy)
	cfg.MaxRounds = 2
	cfg.StrategyConfig.MaxNoImprovement = 3

	e1 := newEnv(t, kernelDir(t))
	srv := llmtest.NewServer(t)
	script(t, srv, []string{diagnosis("FAST"), diagnosis("SLOW")},
		map[string][]llmtest.Reply{
			"FAST": {pyReply(candidateSource(t, "fast.py"))},
			"SLOW": {pyReply(candidateSource(t, "slow.py"))},
		}, nil)
	lc := LLMConfig(cfg)
	lc.Provider, lc.BaseURL, lc.Record = "openai", srv.BaseURL(), recDir
	rec, err := llm.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	first, err := Run(context.Background(), e1.input(cfg, rec))
	if err != nil {
		t.Fatalf("recorded run: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(recDir, "*.json"))
	if len(files) != srv.Count() || len(files) == 0 {
		t.Fatalf("recorded %d exchanges of %d calls", len(files), srv.Count())
	}

	e2 := newEnv(t, kernelDir(t))
	rp, err := NewReplay(recDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Run(context.Background(), e2.input(cfg, llm.NewMeter(rp, llm.Limits{}, llm.WithConcurrency(4))))
	if err != nil {
		t.Fatalf("replayed run: %v", err)
	}
	if !second.Improved || second.Best.ID != first.Best.ID || second.Rounds != first.Rounds {
		t.Errorf("replay: best %s after %d rounds, recording: best %s after %d rounds", second.Best.ID, second.Rounds, first.Best.ID, first.Rounds)
	}
	a, b := mustCandidates(t, e1.store, first.RunID), mustCandidates(t, e2.store, second.RunID)
	if len(a) != len(b) {
		t.Fatalf("replay made %d candidates, the recording %d", len(b), len(a))
	}
	for id, c := range a {
		if b[id].SourceHash != c.SourceHash || b[id].Status != c.Status {
			t.Errorf("%s: replay %s, recording %s", id, b[id].Status, c.Status)
		}
	}
	if second.Usage.Calls != first.Usage.Calls {
		t.Errorf("replay made %d llm calls, the recording %d", second.Usage.Calls, first.Usage.Calls)
	}
	t.Logf("%d of %d replayed calls matched after masking numbers or by similarity", rp.Inexact(), second.Usage.Calls)
}

func TestReplayMatching(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.NewServer(t)
	srv.On("kernel A", llmtest.Reply{Text: "reply A"})
	srv.On("kernel B", llmtest.Reply{Text: "reply B"})
	rec, err := llm.New(llm.Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "m", Record: dir})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(c llm.Client, purpose llm.Purpose, text string) (string, error) {
		r, err := c.Complete(context.Background(), llm.Request{Purpose: purpose, Messages: []llm.Message{llm.User(text)}})
		return r.Text, err
	}
	for _, p := range []string{"optimize kernel A in 1.25 ms\n```python\nA = 1\n```", "optimize kernel B in 3.5 ms\n```python\nB = 2\n```"} {
		if _, err := ask(rec, llm.PurposeOptimize, p); err != nil {
			t.Fatal(err)
		}
	}
	rp, err := NewReplay(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, prompt, want string
		purpose            llm.Purpose
		inexact            int
		miss               bool
	}{
		{"exact, another model asked", "optimize kernel A in 1.25 ms\n```python\nA = 1\n```", "reply A", llm.PurposeOptimize, 0, false},
		{"numbers masked", "optimize kernel B in 2.75 ms\n```python\nB = 2\n```", "reply B", llm.PurposeOptimize, 1, false},
		{"nearest by code", "rewrite kernel (B) now\n```python\nB = 2\n```", "reply B", llm.PurposeOptimize, 2, false},
		{"no such purpose", "kernel A", "", llm.PurposeReflect, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ask(rp, tc.purpose, tc.prompt)
			if tc.miss {
				if !errors.Is(err, llm.ErrReplayMiss) {
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
	rp.Strict = true
	if _, err := ask(rp, llm.PurposeOptimize, "something else entirely"); !errors.Is(err, llm.ErrReplayMiss) {
		t.Errorf("strict replay served an unrelated request: %v", err)
	}
}

func TestNewReplayRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"hello": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewReplay(dir, nil); err == nil || !strings.Contains(err.Error(), "not a kagent llm record") {
		t.Fatalf("err %v", err)
	}
	if _, err := NewReplay(filepath.Join(dir, "missing"), nil); err == nil {
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
		rp, err := NewReplay(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		rp.Match = match
		var got []string
		for range 4 {
			r, err := rp.Complete(context.Background(), llm.Request{Purpose: llm.PurposeOptimize, Messages: []llm.Message{llm.User("a real prompt of 1.5 ms")}})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Text)
		}
		if want := "reply 1,reply 2,reply 3,reply 3"; strings.Join(got, ",") != want {
			t.Errorf("%s: served %v, want %s", match, got, want)
		}
		if _, err := rp.Complete(context.Background(), llm.Request{Purpose: llm.PurposeDiagnose, Messages: []llm.Message{llm.User("x")}}); !errors.Is(err, llm.ErrReplayMiss) {
			t.Errorf("%s: a purpose with no record: %v", match, err)
		}
	}
}
