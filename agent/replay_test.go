package agent

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/configs"
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
	rp, err := llm.NewReplayer(recDir)
	if err != nil {
		t.Fatal(err)
	}
	rp.Match = llm.MatchSimilar
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
