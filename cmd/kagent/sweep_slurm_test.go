package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/sweep"
	"github.com/kagent-kernels/kagent/sweep/slurm"
)

// slurmCluster skips the test unless a Slurm cluster runs here
// (KAGENT_SLURM=1, as .ci/run sets after .ci/slurm-up.sh).
func slurmCluster(t *testing.T) {
	t.Helper()
	if os.Getenv("KAGENT_SLURM") != "1" {
		t.Skip("KAGENT_SLURM=1 is not set (start a one-node cluster with .ci/slurm-up.sh)")
	}
	if os.Getenv("KAGENT_PYTHON") == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
}

// waitJob polls the Slurm job of a sweep dir until no task is pending or
// running.
func waitJob(t *testing.T, dir string, limit time.Duration) slurm.Status {
	t.Helper()
	job, err := slurm.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		st, err := slurm.Query(ctx, job, slurm.Options{})
		if err != nil {
			t.Fatalf("slurm job %s did not end in %s: %v", job.ID, limit, err)
		}
		if st.Count(slurm.IsActive) == 0 {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("slurm job %s did not end in %s: %s", job.ID, limit, taskCounts(st))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// TestSweepOnSlurm runs the six test problems as a 2-task Slurm array job
// on the cpu platform with the fake LLM (tasks reach it on 127.0.0.1),
// follows it with `sweep status`, merges it, and checks the merged report
// against a local run of the same sweep.
func TestSweepOnSlurm(t *testing.T) {
	slurmCluster(t)
	srv := sweepServer(t)
	cfg := sweepConfig(t, srv)
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	common := []string{"sweep", "--kernelbench", src, "--level", "1", "--problems", "1-6", "--config", cfg, "--seeds", "1"}

	r := run(t, work, append(common, "--out", "local")...)
	if r.code != ExitOK {
		t.Fatalf("local sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = run(t, work, append(common, "--out", "slurm", "--backend", "slurm", "--shards", "2")...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "submitted slurm job") || !strings.Contains(r.stdout, "kagent sweep status") {
		t.Fatalf("submit: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	dir := filepath.Join(work, "slurm")
	script, err := os.ReadFile(filepath.Join(dir, "slurm", "sweep.sbatch"))
	if err != nil || !strings.Contains(string(script), `'--shard='"$task"'/2'`) || strings.Contains(string(script), "--gres") {
		t.Errorf("batch script: %v\n%s", err, script)
	}
	st := waitJob(t, dir, 8*time.Minute)
	if err := st.Err(); err != nil {
		for _, task := range st.Tasks {
			log, _ := os.ReadFile(task.Log)
			t.Logf("task %d log:\n%s", task.Index, log)
		}
		t.Fatalf("slurm job: %v", err)
	}

	r = run(t, work, "sweep", "status", "slurm")
	if r.code != ExitOK || !strings.Contains(r.stdout, "5 done, 1 failed") || !strings.Contains(r.stdout, ": 2 COMPLETED\n") ||
		len(taskRow.FindAllString(r.stdout, -1)) != 2 || !strings.Contains(r.stdout, filepath.Join(dir, "slurm", "task-1.log")) {
		t.Errorf("status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, work, "sweep", "merge", "slurm")
	if r.code != ExitOK || !strings.Contains(r.stdout, "6 of 6 problems have a result: 5 correct, 1 failed, 0 errors") {
		t.Fatalf("merge: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Each shard ran its slice: shard-0-of-2.json holds problems 1, 3, 5.
	shard0, err := sweep.ReadResults(filepath.Join(dir, "shard-0-of-2.json"))
	if err != nil || len(shard0.Results) != 3 || shard0.Results[0].Shard != "0/2" || shard0.Results[1].ID != 3 {
		t.Errorf("shard-0-of-2.json: %v %+v", err, shard0.Problems)
	}
	local, merged := readReport(t, filepath.Join(work, "local")), readReport(t, dir)
	if stable(local) != stable(merged) {
		t.Errorf("the merged report differs from the local run's (times masked):\n--- local\n%s\n--- merged\n%s", local, merged)
	}
	// fast_0 against torch.compile is n/a only where torch.compile does not run (torch 1.x).
	if !strings.Contains(merged, "| 0 | 0.833 (5/6) | 0.833 (5/6) |") && !strings.Contains(merged, "| 0 | 0.833 (5/6) | n/a |") {
		t.Errorf("merged report lacks fast_0 of 5/6:\n%s", merged)
	}
	// The merged report is exactly the report of the shards' results.
	res, err := sweep.ReadResults(filepath.Join(dir, sweep.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := string(sweep.Markdown(res.Sweep, res.Results, time.Now())); dropTimestamp(want) != dropTimestamp(merged) {
		t.Errorf("merged report is not the report of the merged results")
	}
}

// TestSweepOnSlurmFailures: a rejected submission and failing tasks give
// one-line errors naming Slurm's reason, or the failed tasks and their logs.
func TestSweepOnSlurmFailures(t *testing.T) {
	slurmCluster(t)
	srv := sweepServer(t)
	cfg := sweepConfig(t, srv)
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	common := []string{"sweep", "--kernelbench", src, "--problems", "1,2", "--config", cfg, "--backend", "slurm", "--shards", "2"}

	oneLineError(t, run(t, work, append(common, "--out", "rejected", "--slurm-partition", "nope")...), ExitUsage,
		"sbatch rejected the job: ", "invalid partition", "nope")

	// Every task fails: the Python the config names does not exist. That is
	// what the machine lacks, not the problems' fault: each task stops with
	// exit 4 and leaves its problem interrupted, to be run again once the
	// machine is fixed. --wait follows the job to its end, merges what there
	// is and names the tasks.
	r := run(t, work, append(common, "--out", "broken", "--python", "/nonexistent/python3", "--wait", "--poll", "500ms")...)
	dir := filepath.Join(work, "broken")
	oneLineError(t, r, ExitError, "2 task(s) failed", fmt.Sprintf("task 0 FAILED exit %d", ExitUnavailable), filepath.Join(dir, "slurm", "task-1.log"))
	if !strings.Contains(r.stdout, "submitted slurm job") || !strings.Contains(r.stdout, ": 2 FAILED\n") ||
		!strings.Contains(r.stdout, "0 of 2 problems have a result") {
		t.Errorf("--wait output:\n%s", r.stdout)
	}
	r = run(t, work, "sweep", "status", "broken")
	oneLineError(t, r, ExitError, "2 task(s) failed", "task 0 FAILED exit ", filepath.Join(dir, "slurm", "task-0.log"),
		filepath.Join(dir, "slurm", "task-1.log"))
	if !strings.Contains(r.stdout, "2 interrupted") || strings.Count(r.stdout, "/nonexistent/python3 not found") != 2 ||
		!strings.Contains(r.stdout, ": 2 FAILED\n") || len(taskRow.FindAllString(r.stdout, -1)) != 2 {
		t.Errorf("status output:\n%s", r.stdout)
	}
	oneLineError(t, run(t, work, "sweep", "merge", "broken"), ExitError, "2 task(s) failed", "task-1.log")
	log, err := os.ReadFile(filepath.Join(dir, "slurm", "task-1.log"))
	if err != nil || !strings.Contains(string(log), "/nonexistent/python3") {
		t.Errorf("task 1's log does not say why: %v\n%s", err, log)
	}
}

// dropTimestamp drops the one line of a report that says when it was written.
func dropTimestamp(report string) string {
	var out []string
	for _, l := range strings.Split(report, "\n") {
		if !strings.HasPrefix(l, sweep.TimestampPrefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// readReport reads report.md of a sweep dir.
func readReport(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, sweep.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Parts of report.md that depend on timings, which two runs on a CPU do not
// share: the fast_p rows above p=0, the geometric means, the times and
// speedups of the problems' table, time per problem and LLM time.
var (
	// taskRow is a row of the Slurm tasks table of `sweep status`.
	taskRow   = regexp.MustCompile(`(?m)^[0-9]+ +[0-9]+/2 +[A-Z_]+ +`)
	timingRow = regexp.MustCompile(`(?m)^\| (0\.5|0\.8|1|1\.5|2) \|.*$`)
	number    = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(×| s| ms)?`)
)

// stable masks the timing-dependent parts of a report and drops its
// timestamp line.
func stable(report string) string {
	var out []string
	inProblems := false
	for _, line := range strings.Split(report, "\n") {
		switch {
		case strings.HasPrefix(line, sweep.TimestampPrefix):
			continue
		case strings.HasPrefix(line, "## "):
			inProblems = line == "## Problems"
		case strings.HasPrefix(line, "Geometric-mean"), strings.HasPrefix(line, "| time per problem"), strings.HasPrefix(line, "| LLM"):
			line = number.ReplaceAllString(line, "#")
		case timingRow.MatchString(line):
			line = "| p>0 row |"
		case inProblems && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| id"):
			cells := strings.Split(line, "|")
			// | id | problem | status | first kernel | kernel ms ... wall s |: keep the first four.
			if len(cells) > 5 {
				line = strings.Join(cells[:5], "|") + "| #"
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
