package sweep

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestStatusCompleteAndUnmerged: ReadStatus says a finished local sweep is
// complete with nothing to merge; finished shards have results to merge
// until a merge takes them in; a sweep with a problem on an error is not
// complete and has nothing to merge.
func TestStatusCompleteAndUnmerged(t *testing.T) {
	ctx := context.Background()
	status := func(dir string) StatusReport {
		t.Helper()
		rep, err := ReadStatus(dir)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	local := filepath.Join(t.TempDir(), "local")
	if _, err := Run(ctx, Options{Dir: local, Source: testSource, Level: 1, Strategy: "greedy", Runner: &fakeRunner{}}); err != nil {
		t.Fatal(err)
	}
	if rep := status(local); !rep.Complete || rep.Unmerged != nil {
		t.Errorf("finished local sweep: complete %v, unmerged %v; want complete, nothing to merge", rep.Complete, rep.Unmerged)
	}

	sharded := filepath.Join(t.TempDir(), "sharded")
	for i := range 2 {
		if _, err := Run(ctx, Options{Dir: sharded, Source: testSource, Level: 1, Strategy: "greedy", Runner: &fakeRunner{},
			Shard: &Shard{Index: i, Count: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	rep := status(sharded)
	if want := []string{"shard-0-of-2.json", "shard-1-of-2.json"}; rep.Complete || !slices.Equal(rep.Unmerged, want) {
		t.Errorf("finished shards: complete %v, unmerged %v; want not complete, %v", rep.Complete, rep.Unmerged, want)
	}
	if _, err := Merge(sharded, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep := status(sharded); !rep.Complete || rep.Unmerged != nil {
		t.Errorf("merged shards: complete %v, unmerged %v; want complete, nothing to merge", rep.Complete, rep.Unmerged)
	}
	// A later result for one problem in shard 1/2's file (a shard run
	// again after the merge): something to merge again.
	path := filepath.Join(sharded, "shard-1-of-2.json")
	f, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Results[0].FinishedAt = f.Results[0].FinishedAt.Add(time.Hour)
	if err := writeJSON(path, f); err != nil {
		t.Fatal(err)
	}
	if rep := status(sharded); rep.Complete || !slices.Equal(rep.Unmerged, []string{"shard-1-of-2.json"}) {
		t.Errorf("a shard with a later result: complete %v, unmerged %v; want not complete, shard-1-of-2.json", rep.Complete, rep.Unmerged)
	}

	withError := filepath.Join(t.TempDir(), "error")
	failing := runnerFunc(func(_ context.Context, job Job) (ProblemResult, error) {
		if job.Problem.ID == 2 {
			return ProblemResult{}, errors.New("worker exited")
		}
		return fixedResult(job.Problem.ID), nil
	})
	if _, err := Run(ctx, Options{Dir: withError, Source: testSource, Level: 1, Strategy: "greedy", Runner: failing}); err != nil {
		t.Fatal(err)
	}
	if rep := status(withError); rep.Complete || rep.Unmerged != nil || rep.Counts["error"] != 1 {
		t.Errorf("local sweep with an error: complete %v, unmerged %v, counts %v; want not complete, nothing to merge, 1 error",
			rep.Complete, rep.Unmerged, rep.Counts)
	}
}
