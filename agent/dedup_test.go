package agent

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
)

// fingerprinting is a session that only fingerprints, by candidate id.
type fingerprinting struct {
	platform.Session
	byID map[string]platform.Fingerprint
}

func (f fingerprinting) Fingerprint(_ context.Context, c platform.Candidate) (platform.Fingerprint, error) {
	return f.byID[c.ID], nil
}

// TestCodeDuplicates: a candidate whose fingerprint (method and hash)
// repeats an earlier one's is rejected as its duplicate; a pipeline of a
// resumed run finds the earlier ones in their fingerprint.json.
func TestCodeDuplicates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.CreateRun(ctx, store.Run{KernelDir: "/k", Problem: "k", Strategy: "elites", Platform: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.StartRound(ctx, run.ID, 0); err != nil { // the store's order of rounds is not under test
		t.Fatal(err)
	}
	fp := func(method, hash string) platform.Fingerprint {
		return platform.Fingerprint{Method: method, Hash: hash}
	}
	sess := fingerprinting{byID: map[string]platform.Fingerprint{
		"r1c1": fp("ttir", "aaa"), "r1c2": fp("ttir", "aaa"), "r1c3": fp("ast", "aaa"),
		"r1c4": fp("ttir", ""), "r2c1": fp("ttir", "aaa"), "r2c2": fp("ttir", "bbb"),
	}}
	newPipeline := func() *pipeline {
		return &pipeline{in: RunInput{Session: sess}, st: st, runID: run.ID, art: &artifacts{dir: filepath.Join(dir, "run")},
			log: slog.New(slog.DiscardHandler)}
	}
	first := newPipeline()
	resumed := newPipeline()
	tests := []struct {
		name string
		p    *pipeline
		id   string
		dup  string // the earlier candidate named, "" for none
	}{
		{"the first of its code", first, "r1c1", ""},
		{"the same code", first, "r1c2", "r1c1"},
		{"another method's hash", first, "r1c3", ""},
		{"no hash", first, "r1c4", ""},
		{"after a resume", resumed, "r2c1", "r1c1"},
		{"new code after a resume", resumed, "r2c2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := st.AddCandidate(ctx, store.Candidate{RunID: run.ID, ID: tt.id, Source: "# " + tt.id + "\n"})
			if err != nil {
				t.Fatal(err)
			}
			v, err := tt.p.codeDuplicate(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if tt.dup == "" {
				if v != nil {
					t.Errorf("rejected: %+v", v)
				}
				return
			}
			if v == nil || v.Failure != failDup || !strings.Contains(v.Reason, tt.dup) || DuplicateBy(v) != "code" {
				t.Fatalf("verdict %+v, want a duplicate of %s by code", v, tt.dup)
			}
			if _, err := st.UpdateCandidate(ctx, run.ID, c.ID, store.Update{Status: store.StatusRejected, Verdict: v}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if got := DuplicateBy(&platform.Verdict{Failure: failDup, Checks: []platform.Check{{Name: failDup}}}); got != "source" {
		t.Errorf("a source duplicate: %q", got)
	}
	noFP := &pipeline{in: RunInput{Session: struct{ platform.Session }{}}}
	if v, err := noFP.codeDuplicate(ctx, store.Candidate{ID: "r3c1"}); v != nil || err != nil {
		t.Errorf("a session without fingerprints: %v %v", v, err)
	}
}
