package sweep

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoAbsolutePaths: messages that name files of the sweep dir or of the
// problems folder are recorded relative to them, and the report names the
// problems folder by its base name; no file a sweep writes for people to
// read holds an absolute path.
func TestNoAbsolutePaths(t *testing.T) {
	src, err := filepath.Abs(testSource)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "sweep")
	abs, _ := filepath.Abs(dir)
	run := runnerFunc(func(_ context.Context, job Job) (ProblemResult, error) {
		switch job.Problem.ID {
		case 2:
			return ProblemResult{}, fmt.Errorf("worker: cannot read %s: permission denied", job.Problem.Path)
		case 3:
			return ProblemResult{Status: StatusFailed, Error: "the first kernel failed verification: import: " +
				filepath.Join(job.Dir, "input.py") + ":3: SyntaxError",
				Generation: &GenerationSummary{Seeds: 1, Failures: []string{"seed 1: static: " + filepath.Join(job.RunDir, "generate", "s1.py")}}}, nil
		case 4:
			return ProblemResult{}, errors.New("disk full writing " + job.RunDir)
		}
		return fixedResult(job.Problem.ID), nil
	})
	if _, err := Run(context.Background(), Options{Dir: dir, Source: src, Level: 1, Strategy: "greedy", Runner: run}); err != nil {
		t.Fatal(err)
	}
	res, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		2: "worker: cannot read level1/2_Scale.py: permission denied",
		3: "the first kernel failed verification: import: problems/3_ReLU/input.py:3: SyntaxError",
		4: "disk full writing runs/4_Square",
	}
	for _, r := range res.Results {
		if w, ok := want[r.ID]; ok && r.Error != w {
			t.Errorf("problem %d: error %q, want %q", r.ID, r.Error, w)
		}
		if r.ID == 3 && (r.Generation == nil || r.Generation.Failures[0] != "seed 1: static: runs/3_ReLU/generate/s1.py") {
			t.Errorf("problem 3: generation %+v", r.Generation)
		}
	}
	md := readFile(t, filepath.Join(dir, ReportFile))
	if !strings.Contains(string(md), "| source | kernelbench (level 1) |") {
		t.Errorf("report.md does not name the problems folder by its base name:\n%s", md)
	}
	for _, f := range []string{ReportFile, EvalResultsFile, FastPFile, BaselineEagerFile, filepath.Join(ProblemsDir, "3_ReLU", problemResultOut)} {
		b := readFile(t, filepath.Join(dir, f))
		for _, p := range []string{abs, src} {
			if strings.Contains(string(b), p) {
				t.Errorf("%s holds the absolute path %s", f, p)
			}
		}
	}
}
