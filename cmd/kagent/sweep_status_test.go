package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/sweep"
)

// doneRunner gives every problem a correct result without running it.
type doneRunner struct{}

func (doneRunner) RunProblem(context.Context, sweep.Job) (sweep.ProblemResult, error) {
	t := &sweep.Timing{MedianMS: 1, MeanMS: 1, N: 10}
	return sweep.ProblemResult{Status: sweep.StatusDone, Correct: true, Compiled: true, Kernel: t, Eager: t, Platform: "cpu"}, nil
}

// TestSweepStatusComplete: `sweep status` on a finished sweep without
// shards says it is complete and where the report is, and does not ask for
// a merge; on finished shards it asks for one.
func TestSweepStatusComplete(t *testing.T) {
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	sel, err := sweep.ParseSelection("1-2")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	dir := filepath.Join(work, "local")
	if _, err := sweep.Run(context.Background(), sweep.Options{Dir: dir, Source: src, Level: 1, Selection: sel, Strategy: "tune",
		Runner: doneRunner{}}); err != nil {
		t.Fatal(err)
	}
	r := run(t, work, "sweep", "status", "local")
	want := "\nthe sweep is complete; report: " + filepath.Join(dir, "report.md") + "\n"
	if r.code != ExitOK || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "merge") {
		t.Errorf("status of a finished local sweep: exit %d, want %q and no merge:\n%s\n%s", r.code, want, r.stdout, r.stderr)
	}

	for i := range 2 {
		if _, err := sweep.Run(context.Background(), sweep.Options{Dir: filepath.Join(work, "sharded"), Source: src, Level: 1,
			Selection: sel, Strategy: "tune", Runner: doneRunner{}, Shard: &sweep.Shard{Index: i, Count: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	r = run(t, work, "sweep", "status", "sharded")
	want = "every problem has ended; shard-0-of-2.json, shard-1-of-2.json hold results that results.json lacks; combine them with: kagent sweep merge "
	if r.code != ExitOK || !strings.Contains(r.stdout, want) {
		t.Errorf("status of finished shards: exit %d, want %q:\n%s\n%s", r.code, want, r.stdout, r.stderr)
	}
}

func TestStatusAdvice(t *testing.T) {
	ps := make([]sweep.ProblemStatus, 4)
	for _, tc := range []struct {
		name     string
		counts   map[string]int
		unmerged []string
		complete bool
		want     string
	}{
		{"complete", map[string]int{"done": 3, "failed": 1}, nil, true, "the sweep is complete; report: /s/report.md"},
		{"shards to merge", map[string]int{"done": 4}, []string{"shard-0-of-2.json"}, false,
			"every problem has ended; shard-0-of-2.json holds results that results.json lacks; combine them with: kagent sweep merge /s"},
		{"running", map[string]int{"done": 2, "running": 1, "optimizing": 1}, []string{"shard-0-of-2.json"}, false,
			"2 of 4 problems are being worked on"},
		{"an error", map[string]int{"done": 3, "error": 1}, nil, false,
			"1 of 4 problems have no final result; run the sweep or its shards again to run them"},
		{"a shard missing", map[string]int{"done": 2, "pending": 2}, []string{"shard-1-of-2.json"}, false,
			"2 of 4 problems have no final result (run the sweep or its shards again to run them); shard-1-of-2.json holds results that results.json lacks; combine them with: kagent sweep merge /s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := sweep.StatusReport{Dir: "/s", Problems: ps, Counts: tc.counts, Unmerged: tc.unmerged, Complete: tc.complete}
			if got := statusAdvice(rep); got != tc.want {
				t.Errorf("advice\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
