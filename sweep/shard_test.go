package sweep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRunner returns a fixed result per problem id, so that a local run and
// a sharded one produce the same per-problem results.
type fakeRunner struct {
	mu  sync.Mutex
	ran []int
}

func (f *fakeRunner) RunProblem(ctx context.Context, job Job) (ProblemResult, error) {
	f.mu.Lock()
	f.ran = append(f.ran, job.Problem.ID)
	f.mu.Unlock()
	job.Phase("optimizing", "")
	return fixedResult(job.Problem.ID), nil
}

// fixedResult is problem id's made-up result: ids divisible by 3 fail, the
// others are correct with speedups that spread over the fast_p thresholds.
func fixedResult(id int) ProblemResult {
	if id%3 == 0 {
		return ProblemResult{Status: StatusFailed, Origin: OriginGenerated, Error: "generate: all 4 seeds failed: seed 1: correctness: wrong",
			Generation: &GenerationSummary{Seeds: 4, Kernels: 8}, LLM: Usage{Calls: 8, Tokens: 8000, Seconds: 40}, WallSeconds: 50}
	}
	k := 1.0 / (0.4 * float64(id))
	return ProblemResult{Status: StatusDone, Correct: true, Compiled: true, Origin: OriginGenerated, Improved: id%2 == 0,
		Generation: &GenerationSummary{Seeds: 4, Winner: "s1", Kernels: 1}, RunID: "x", StopReason: "plateau: 3 rounds without a promotion",
		Kernel: &Timing{MedianMS: k, MeanMS: k * 1.01, StdMS: k / 50, N: 100}, Input: &Timing{MedianMS: k * 1.2, MeanMS: k * 1.2, N: 100},
		Eager: &Timing{MedianMS: 1, MeanMS: 1, N: 100}, Compile: &Timing{MedianMS: 0.8, MeanMS: 0.8, N: 100},
		Platform: "cuda", Device: "NVIDIA H200", Representative: true,
		LLM: Usage{Calls: 10 + id, Tokens: int64(1000 * id), CostUSD: 0.01 * float64(id), Seconds: float64(20 + id)}, WallSeconds: float64(30 + 2*id)}
}

func fixedNow(ts string) func() time.Time {
	t, _ := time.Parse(time.RFC3339, ts)
	return func() time.Time { return t }
}

// TestShardsMergeLikeLocal: shards 0/2 and 1/2, merged, give the report of
// a local run with the same per-problem results (timestamp line apart), and
// the same plot and KernelBench files.
func TestShardsMergeLikeLocal(t *testing.T) {
	ctx := context.Background()
	local := filepath.Join(t.TempDir(), "local")
	if _, err := Run(ctx, Options{Dir: local, Source: testSource, Level: 1, Strategy: "greedy", Runner: &fakeRunner{},
		Workers: 3, Now: fixedNow("2026-01-01T10:00:00Z")}); err != nil {
		t.Fatalf("local run: %v", err)
	}

	sharded := filepath.Join(t.TempDir(), "sharded")
	var ran []int
	for i := range 2 {
		f := &fakeRunner{}
		sum, err := Run(ctx, Options{Dir: sharded, Source: testSource, Level: 1, Strategy: "greedy", Runner: f,
			Shard: &Shard{Index: i, Count: 2}, Now: fixedNow("2026-02-02T10:00:00Z")})
		if err != nil {
			t.Fatalf("shard %d/2: %v", i, err)
		}
		if sum.ReportPath != "" || !sum.Complete || sum.Problems != 3 {
			t.Errorf("shard %d/2: report %q, complete %v, %d problems", i, sum.ReportPath, sum.Complete, sum.Problems)
		}
		if _, err := os.Stat(filepath.Join(sharded, (Shard{Index: i, Count: 2}).FileName())); err != nil {
			t.Errorf("shard %d/2 wrote no shard file: %v", i, err)
		}
		ran = append(ran, f.ran...)
	}
	slices.Sort(ran)
	if !slices.Equal(ran, []int{1, 2, 3, 4, 5, 6}) {
		t.Errorf("the shards ran %v, want every problem once", ran)
	}
	if _, err := os.Stat(filepath.Join(sharded, ReportFile)); err == nil {
		t.Error("a shard wrote the report")
	}
	sum, err := Merge(sharded, MergeOptions{Now: fixedNow("2026-03-03T10:00:00Z")})
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	if !sum.Complete || len(sum.Results) != 6 || len(sum.MissingShards) != 0 {
		t.Errorf("merge: complete %v, %d results, missing %v", sum.Complete, len(sum.Results), sum.MissingShards)
	}

	a, b := readFile(t, filepath.Join(local, ReportFile)), readFile(t, filepath.Join(sharded, ReportFile))
	if bytes.Equal(a, b) {
		t.Error("the reports are byte-identical: the timestamp line should differ")
	}
	if withoutTimestamp(a) != withoutTimestamp(b) {
		t.Errorf("merged report differs from the local one:\n--- local\n%s\n--- merged\n%s", a, b)
	}
	for _, f := range []string{PlotFile, EvalResultsFile, BaselineEagerFile, BaselineCompileFile} {
		if !bytes.Equal(readFile(t, filepath.Join(local, f)), readFile(t, filepath.Join(sharded, f))) {
			t.Errorf("%s differs between the local run and the merge", f)
		}
	}
	// Merging again changes nothing but the timestamp.
	if _, err := Merge(sharded, MergeOptions{Now: fixedNow("2026-04-04T10:00:00Z")}); err != nil {
		t.Fatal(err)
	}
	if c := readFile(t, filepath.Join(sharded, ReportFile)); withoutTimestamp(c) != withoutTimestamp(b) {
		t.Error("a second merge changed the report")
	}

	rep, err := ReadStatus(sharded)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 3 || rep.Files[1].Shard != "0/2" || rep.Files[1].Final != 3 || !rep.Files[2].Complete {
		t.Errorf("status files: %+v", rep.Files)
	}
	if rep.Counts["done"] != 4 || rep.Counts["failed"] != 2 || len(rep.Problems) != 6 || rep.Problems[0].Shard != "0/2" {
		t.Errorf("status counts %v, first problem %+v", rep.Counts, rep.Problems[0])
	}
}

// TestMergeMissingShard: a merge with one of two shards reports the other
// as missing and counts its problems as without a result.
func TestMergeMissingShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	if _, err := Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1, Strategy: "greedy", Runner: &fakeRunner{},
		Shard: &Shard{Index: 1, Count: 2}}); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts["pending"] != 3 || !slices.Equal(rep.MissingShards, []string{"0/2"}) {
		t.Errorf("status: counts %v, missing %v", rep.Counts, rep.MissingShards)
	}
	sum, err := Merge(dir, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Complete || len(sum.Results) != 3 || !slices.Equal(sum.MissingShards, []string{"0/2"}) {
		t.Errorf("merge: complete %v, %d results, missing %v", sum.Complete, len(sum.Results), sum.MissingShards)
	}
	md := string(readFile(t, filepath.Join(dir, ReportFile)))
	if !strings.Contains(md, "3 without a result") || !strings.Contains(md, "| 1 | Add | no result |") {
		t.Errorf("report of a partial merge:\n%s", md)
	}
}

// TestMergeRefusesAnotherSweep: a shard file of another sweep in the dir is
// an error, not a silent mix.
func TestMergeRefusesAnotherSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	if _, err := Run(context.Background(), Options{Dir: dir, Source: testSource, Level: 1, Strategy: "greedy", Runner: &fakeRunner{},
		Shard: &Shard{Index: 0, Count: 2}}); err != nil {
		t.Fatal(err)
	}
	other, err := ReadResults(filepath.Join(dir, "shard-0-of-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	other.Sweep.Strategy = "beam_search"
	if err := writeJSON(filepath.Join(dir, "shard-1-of-2.json"), other); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(dir, MergeOptions{}); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "shard-1-of-2.json") {
		t.Errorf("merge: %v, want ErrMismatch naming shard-1-of-2.json", err)
	}
	if _, err := Merge(t.TempDir(), MergeOptions{}); !errors.Is(err, ErrNoResults) {
		t.Errorf("merge of an empty dir: %v, want ErrNoResults", err)
	}
}

func TestShardSlices(t *testing.T) {
	var ps []Problem
	for id := 1; id <= 11; id++ {
		ps = append(ps, Problem{ID: id * 3})
	}
	for n := 1; n <= 5; n++ {
		var all []int
		for i := range n {
			sl := Shard{Index: i, Count: n}.Of(ps)
			if len(sl) < len(ps)/n || len(sl) > len(ps)/n+1 {
				t.Errorf("shard %d/%d has %d problems", i, n, len(sl))
			}
			all = append(all, problemIDs(sl)...)
		}
		slices.Sort(all)
		if !slices.Equal(all, problemIDs(ps)) {
			t.Errorf("shards of %d: %v, want a partition", n, all)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		err  bool
	}{
		{"0/2", Shard{0, 2}, false},
		{" 3/4 ", Shard{3, 4}, false},
		{"0/1", Shard{0, 1}, false},
		{"2/2", Shard{}, true},
		{"-1/2", Shard{}, true},
		{"1/0", Shard{}, true},
		{"1", Shard{}, true},
		{"a/b", Shard{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("ParseShard(%q) = %v, %v", tc.in, got, err)
			}
			if err != nil && (!errors.Is(err, ErrSelection) || strings.Contains(err.Error(), "\n")) {
				t.Errorf("error %q: want one line wrapping ErrSelection", err)
			}
		})
	}
	if got := (Shard{Index: 1, Count: 4}).FileName(); got != "shard-1-of-4.json" {
		t.Errorf("FileName %q", got)
	}
	if sh, ok := parseShardFile("shard-1-of-4.json"); !ok || sh != (Shard{1, 4}) {
		t.Errorf("parseShardFile: %v %v", sh, ok)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
