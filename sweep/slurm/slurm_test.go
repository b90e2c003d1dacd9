package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testSpec(t *testing.T, shards int) Spec {
	return Spec{Dir: t.TempDir(), Shards: shards, Args: []string{"/usr/local/bin/kagent", "sweep", "--shard", "{index}/" + fmt.Sprint(shards)}}
}

func TestSubmit(t *testing.T) {
	f := newFakeSlurm(t)
	spec := testSpec(t, 3)
	opts := f.opts
	opts.Partition, opts.Gres, opts.ExtraArgs = "gpu", "gpu:1", []string{"--account=kern"}
	job, err := Submit(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != "4242" || job.Shards != 3 {
		t.Errorf("job %+v, want id 4242 with 3 shards", job)
	}
	calls := f.calls("sbatch")
	want := "--parsable --array=0-2 --account=kern " + filepath.Join(spec.Dir, "slurm", "sweep.sbatch")
	if len(calls) != 1 || calls[0] != want {
		t.Errorf("sbatch called with %q, want %q", calls, want)
	}
	script, err := os.ReadFile(job.Script)
	if err != nil || !strings.Contains(string(script), "#SBATCH --gres=gpu:1\n") {
		t.Errorf("script %s: %v\n%s", job.Script, err, script)
	}
	loaded, err := Load(spec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.ID != "4242" || loaded.Log(2) != filepath.Join(spec.Dir, "slurm", "task-2.log") {
		t.Errorf("loaded %+v, log %s", loaded, loaded.Log(2))
	}
	if !Recorded(spec.Dir) {
		t.Error("Recorded: false after Submit")
	}
}

func TestSubmitErrors(t *testing.T) {
	tests := []struct {
		name    string
		sbatch  string // fake sbatch body; "" removes it
		is      error
		message string
	}{
		{"sbatch missing", "", ErrNotInstalled, "sbatch: slurm command not found"},
		{"rejected", `echo "sbatch: error: invalid partition specified: nope" >&2
echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2; exit 1`,
			ErrRejected, "sbatch rejected the job: invalid partition specified: nope; Batch job submission failed: Invalid partition name specified"},
		{"garbage", `echo "Submitted batch job"`, ErrCommand, "not a job id"},
		{"hangs", `sleep 30`, ErrCommand, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSlurm(t)
			opts := f.opts
			opts.CommandTimeout = 300 * time.Millisecond
			if tt.sbatch == "" {
				os.Remove(opts.Sbatch)
			} else {
				f.set(t, "sbatch", tt.sbatch)
			}
			spec := testSpec(t, 2)
			start := time.Now()
			_, err := Submit(context.Background(), spec, opts)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.message) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %q: want one line containing %q", err, tt.message)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			if Recorded(spec.Dir) {
				t.Error("a failed submission left a job record")
			}
		})
	}
}

func TestSubmitRefusesWhileActive(t *testing.T) {
	f := newFakeSlurm(t)
	spec := testSpec(t, 2)
	if _, err := Submit(context.Background(), spec, f.opts); err != nil {
		t.Fatal(err)
	}
	f.set(t, "squeue", `echo "0|RUNNING|None"; echo "1|PENDING|Resources"`)
	_, err := Submit(context.Background(), spec, f.opts)
	if !errors.Is(err, ErrActive) || !strings.Contains(err.Error(), "scancel 4242") {
		t.Fatalf("err %v, want ErrActive naming scancel 4242", err)
	}
	// Once the job ended, a new submission is recorded with the old id kept.
	f.set(t, "squeue", ``)
	f.set(t, "scontrol", catFile(t, "scontrol-done.txt"))
	f.set(t, "sbatch", `echo "4243;othercluster"`)
	job, err := Submit(context.Background(), spec, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != "4243" || job.Cluster != "othercluster" || fmt.Sprint(job.Previous) != "[4242]" {
		t.Errorf("job %+v", job)
	}
}

// writeJob records a job of n shards in a temp sweep dir.
func writeJob(t *testing.T, id string, n int) Job {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "slurm"), 0o755)
	data := fmt.Sprintf(`{"job_id": %q, "shards": %d, "dir": %q}`, id, n, dir)
	if err := os.WriteFile(filepath.Join(dir, "slurm", "job.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	job, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func states(st Status) string {
	var parts []string
	for _, t := range st.Tasks {
		exit := "?"
		if t.ExitCode != nil {
			exit = fmt.Sprint(*t.ExitCode)
		}
		parts = append(parts, fmt.Sprintf("%d:%s:%s:%s", t.Index, t.State, exit, t.Source))
	}
	return strings.Join(parts, " ")
}

func TestQuery(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		shards  int
		fakes   map[string]string // command -> body (testdata file when it ends in .json or .txt)
		exits   map[int]string    // task -> exit file content
		want    string
		sources string
		errIs   error
	}{
		{"sacct json, exit code from the exit file", "7", 4,
			map[string]string{"sacct": "sacct-0.0.38-done.json"}, map[int]string{1: "3"},
			"0:COMPLETED:0:sacct 1:FAILED:3:sacct 2:COMPLETED:0:sacct 3:COMPLETED:0:sacct", "[sacct]", ErrTasksFailed},
		{"sacct parsable2 when --json is unsupported", "7", 4,
			map[string]string{"sacct": `if [ "$1" = --json ]; then echo "sacct: unrecognized option '--json'" >&2; exit 1; fi; ` + "@sacct-parsable2-done.txt"}, nil,
			"0:COMPLETED:0:sacct 1:FAILED:3:sacct 2:COMPLETED:0:sacct 3:COMPLETED:0:sacct", "[sacct]", ErrTasksFailed},
		{"no accounting: squeue", "11", 3,
			map[string]string{"squeue": "squeue-active.txt"}, nil,
			"0:RUNNING:?:squeue 1:PENDING:?:squeue 2:PENDING:?:squeue", "[squeue]", ErrActive},
		{"no accounting: scontrol after the end", "7", 4,
			map[string]string{"squeue": ``, "scontrol": "scontrol-done.txt"}, nil,
			"0:COMPLETED:0:scontrol 1:FAILED:3:scontrol 2:COMPLETED:0:scontrol 3:COMPLETED:0:scontrol", "[scontrol]", ErrTasksFailed},
		{"slurm forgot the job: exit files", "7", 3, nil, map[int]string{0: "0", 1: "0", 2: "0\n"},
			"0:COMPLETED:0:exit file 1:COMPLETED:0:exit file 2:COMPLETED:0:exit file", "[exit file]", nil},
		{"lost task", "7", 2, nil, map[int]string{0: "0"},
			"0:COMPLETED:0:exit file 1:UNKNOWN:?:", "[exit file]", ErrTasksFailed},
		{"accounting lags: squeue fills in", "11", 3,
			map[string]string{"sacct": `echo '{"jobs": [], "errors": [{"error": "Nothing found with query"}]}'`, "squeue": "squeue-active.txt"}, nil,
			"0:RUNNING:?:squeue 1:PENDING:?:squeue 2:PENDING:?:squeue", "[squeue]", ErrActive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSlurm(t)
			for name, body := range tt.fakes {
				if strings.HasSuffix(body, ".json") || strings.HasSuffix(body, ".txt") {
					if i := strings.LastIndex(body, "@"); i >= 0 {
						body = body[:i] + catFile(t, body[i+1:])
					} else {
						body = catFile(t, body)
					}
				}
				f.set(t, name, body)
			}
			job := writeJob(t, tt.id, tt.shards)
			for i, s := range tt.exits {
				os.WriteFile(job.exitFile(i), []byte(s), 0o644)
			}
			st, err := Query(context.Background(), job, f.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := states(st); got != tt.want {
				t.Errorf("got  %s\nwant %s\nnotes %q", got, tt.want, st.Notes)
			}
			if fmt.Sprint(st.Sources) != tt.sources {
				t.Errorf("sources %v, want %s", st.Sources, tt.sources)
			}
			err = st.Err()
			if tt.errIs == nil && err != nil || tt.errIs != nil && !errors.Is(err, tt.errIs) {
				t.Errorf("Err() = %v, want %v", err, tt.errIs)
			}
		})
	}
}

func TestTasksFailedMessage(t *testing.T) {
	f := newFakeSlurm(t)
	f.set(t, "scontrol", catFile(t, "scontrol-done.txt"))
	job := writeJob(t, "7", 4)
	st, err := Query(context.Background(), job, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Err()
	var tf *TasksFailedError
	if !errors.As(err, &tf) || len(tf.Tasks) != 1 || tf.Tasks[0].Index != 1 {
		t.Fatalf("err %v, want task 1 failed", err)
	}
	want := "slurm job 7: 1 task(s) failed: task 1 FAILED exit 3, log " + job.Log(1)
	if err.Error() != want {
		t.Errorf("message %q\nwant    %q", err, want)
	}
}

func TestQueryStopsWithContext(t *testing.T) {
	f := newFakeSlurm(t)
	f.set(t, "sacct", `sleep 30`)
	job := writeJob(t, "7", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Query(ctx, job, f.opts)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the context's", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s after the context ended", d)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrNoJob) {
		t.Errorf("empty dir: err %v, want ErrNoJob", err)
	}
	os.MkdirAll(filepath.Join(dir, "slurm"), 0o755)
	os.WriteFile(filepath.Join(dir, "slurm", "job.json"), []byte(`{"shards": 2}`), 0o644)
	if _, err := Load(dir); err == nil || errors.Is(err, ErrNoJob) {
		t.Errorf("record without id: err %v", err)
	}
}

// TestQueryNotes: without accounting, sacct is asked once (not again with
// --parsable2) and its answer is kept as one note.
func TestQueryNotes(t *testing.T) {
	f := newFakeSlurm(t)
	f.set(t, "scontrol", catFile(t, "scontrol-done.txt"))
	st, err := Query(context.Background(), writeJob(t, "7", 4), f.opts)
	if err != nil {
		t.Fatal(err)
	}
	if calls := f.calls("sacct"); len(calls) != 1 || !strings.HasPrefix(calls[0], "--json") {
		t.Errorf("sacct calls %q, want one --json", calls)
	}
	if len(st.Notes) != 1 || st.Notes[0] != "sacct exited with 1: Slurm accounting storage is disabled" {
		t.Errorf("notes %q", st.Notes)
	}
}
