package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
)

// Job is the record of a submitted array job, kept in DIR/slurm/job.json.
type Job struct {
	ID      string `json:"job_id"`
	Cluster string `json:"cluster,omitempty"` // set on federated clusters
	Shards  int    `json:"shards"`
	// Dir is the sweep dir.
	Dir string `json:"dir"`
	// Script is the batch script; SbatchArgs what sbatch was called with.
	Script     string    `json:"script"`
	SbatchArgs []string  `json:"sbatch_args"`
	Args       []string  `json:"args"` // one task's command line, with IndexPlaceholder
	Submitted  time.Time `json:"submitted"`
	// Previous are the ids of earlier jobs of the same sweep dir, oldest first.
	Previous []string `json:"previous_job_ids,omitempty"`
}

// Log is the path of task i's output.
func (j Job) Log(i int) string {
	return filepath.Join(j.Dir, subdir, strings.Replace(logPattern, "%a", strconv.Itoa(i), 1))
}

// exitFile is where task i's batch script writes kagent's exit code.
func (j Job) exitFile(i int) string {
	return filepath.Join(j.Dir, subdir, "task-"+strconv.Itoa(i)+".exit")
}

// Recorded reports whether dir holds a Slurm job record.
func Recorded(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, subdir, recordFile))
	return err == nil
}

// Load reads the job record of the sweep dir dir; ErrNoJob when there is none.
func Load(dir string) (Job, error) {
	path := filepath.Join(dir, subdir, recordFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Job{}, fmt.Errorf("load slurm job of %s: %w", dir, ErrNoJob)
	}
	if err != nil {
		return Job{}, fmt.Errorf("load slurm job: %w", err)
	}
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return Job{}, fmt.Errorf("load slurm job: %s: %w", path, err)
	}
	if j.ID == "" || j.Shards < 1 {
		return Job{}, fmt.Errorf("load slurm job: %s: no job id or shard count", path)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		j.Dir = abs // the record follows the dir if it was moved
	}
	return j, nil
}

// Submit writes the batch script and submits it as an array job of
// spec.Shards tasks, then records the job in spec.Dir. It refuses when the
// dir's previous job still has pending or running tasks (ErrActive).
func Submit(ctx context.Context, spec Spec, opts Options) (Job, error) {
	script, err := Script(spec, opts)
	if err != nil {
		return Job{}, fmt.Errorf("submit slurm job: %w", err)
	}
	var previous []string
	if prev, err := Load(spec.Dir); err == nil {
		st, err := Query(ctx, prev, opts)
		if err != nil {
			return Job{}, fmt.Errorf("submit slurm job: check previous job %s: %w", prev.ID, err)
		}
		if n := st.Count(IsActive); n > 0 {
			return Job{}, fmt.Errorf("submit slurm job: %w: job %s has %d pending or running task(s); wait for it, or cancel it with scancel %s",
				ErrActive, prev.ID, n, prev.ID)
		}
		previous = append(prev.Previous, prev.ID)
	} else if !errors.Is(err, ErrNoJob) {
		return Job{}, fmt.Errorf("submit slurm job: %w", err)
	}

	dir := filepath.Join(spec.Dir, subdir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Job{}, fmt.Errorf("submit slurm job: %w", err)
	}
	scriptPath := filepath.Join(dir, scriptFile)
	if err := atomicfile.Write(scriptPath, []byte(script), 0o755); err != nil {
		return Job{}, fmt.Errorf("submit slurm job: %w", err)
	}
	for i := 0; i < spec.Shards; i++ {
		// Stale exit codes of an earlier job would read as this job's.
		_ = os.Remove(filepath.Join(dir, "task-"+strconv.Itoa(i)+".exit"))
	}
	args := sbatchArgs(spec, opts, scriptPath)
	out, err := runCommand(ctx, opts.CommandTimeout, opts.bin("sbatch", opts.Sbatch), args...)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && ce.ExitCode > 0 {
			return Job{}, fmt.Errorf("submit slurm job: %w", &SubmitError{Message: slurmMessage(ce.Stderr), Script: scriptPath})
		}
		return Job{}, fmt.Errorf("submit slurm job: %w", err)
	}
	id, cluster, err := parseParsable(string(out))
	if err != nil {
		return Job{}, fmt.Errorf("submit slurm job: %w", err)
	}
	job := Job{
		ID: id, Cluster: cluster, Shards: spec.Shards, Dir: spec.Dir,
		Script: scriptPath, SbatchArgs: args, Args: spec.Args,
		Submitted: time.Now().UTC().Truncate(time.Second), Previous: previous,
	}
	data, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return Job{}, fmt.Errorf("submit slurm job: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, recordFile), append(data, '\n'), 0o644); err != nil {
		return job, fmt.Errorf("submit slurm job %s: record it: %w", id, err)
	}
	return job, nil
}

// parseParsable reads `sbatch --parsable` output: "ID" or "ID;CLUSTER".
func parseParsable(out string) (id, cluster string, err error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	id, cluster, _ = strings.Cut(last, ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", "", fmt.Errorf("%w: sbatch printed %q, not a job id", ErrCommand, strings.TrimSpace(out))
	}
	return id, cluster, nil
}
