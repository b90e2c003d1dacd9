package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// State is a task's Slurm state as Slurm spells it (PENDING, RUNNING,
// COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ...), or
// UNKNOWN when no source knows the task.
type State string

// The states the package names; Slurm has more, kept as they are.
const (
	StatePending   State = "PENDING"
	StateRunning   State = "RUNNING"
	StateCompleted State = "COMPLETED"
	StateFailed    State = "FAILED"
	StateCancelled State = "CANCELLED"
	StateTimeout   State = "TIMEOUT"
	StateUnknown   State = "UNKNOWN"
)

// terminal are the states of tasks that ended.
var terminal = map[State]bool{
	StateCompleted: true, StateFailed: true, StateCancelled: true, StateTimeout: true,
	"OUT_OF_MEMORY": true, "NODE_FAIL": true, "PREEMPTED": true, "BOOT_FAIL": true,
	"DEADLINE": true, "REVOKED": true,
}

// normState turns "CANCELLED by 0", "cancelled+" or "" into Slurm's word.
func normState(s string) State {
	s = strings.ToUpper(strings.TrimSpace(s))
	if i := strings.IndexAny(s, " +"); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return StateUnknown
	}
	return State(s)
}

// Task is one array task: one shard.
type Task struct {
	Index    int
	State    State
	ExitCode *int   // nil while unknown
	Reason   string // Slurm's reason (pending, failed), if any
	Log      string // the task's output file
	Source   string // which source said so: sacct, squeue, scontrol, exit file
}

// IsActive: the task is pending or running (or in another non-final state).
func IsActive(t Task) bool { return !terminal[t.State] && t.State != StateUnknown }

// IsSucceeded: the task completed and kagent exited 0.
func IsSucceeded(t Task) bool {
	return t.State == StateCompleted && (t.ExitCode == nil || *t.ExitCode == 0)
}

// IsFailed: the task ended without success, or no source knows what became of it.
func IsFailed(t Task) bool { return !IsActive(t) && !IsSucceeded(t) }

// Status is the state of a job's tasks.
type Status struct {
	Job   Job
	Tasks []Task // one per shard, by index
	// Sources are the sources that answered; Notes say why others did not.
	Sources []string
	Notes   []string
}

// Count is the number of tasks for which pred holds.
func (s Status) Count(pred func(Task) bool) int {
	n := 0
	for _, t := range s.Tasks {
		if pred(t) {
			n++
		}
	}
	return n
}

// Err is nil when every task succeeded, a *TasksFailedError when some failed,
// and an ErrActive error while tasks are pending or running.
func (s Status) Err() error {
	var failed []Task
	for _, t := range s.Tasks {
		if IsFailed(t) {
			failed = append(failed, t)
		}
	}
	if len(failed) > 0 {
		return &TasksFailedError{JobID: s.Job.ID, Tasks: failed}
	}
	if n := s.Count(IsActive); n > 0 {
		return fmt.Errorf("slurm job %s: %w: %d of %d task(s) pending or running", s.Job.ID, ErrActive, n, len(s.Tasks))
	}
	return nil
}

// record is what one source says about one task.
type record struct {
	Index    int
	State    State
	ExitCode *int
	Reason   string
}

// Query asks Slurm for the state of job's tasks: sacct --json, else sacct
// --parsable2, then squeue and scontrol for tasks accounting does not know,
// then the exit-code files. A source that fails is noted, not fatal; only the
// context's end is.
func Query(ctx context.Context, job Job, opts Options) (Status, error) {
	st := Status{Job: job, Tasks: make([]Task, job.Shards)}
	for i := range st.Tasks {
		st.Tasks[i] = Task{Index: i, Log: job.Log(i)}
	}
	missing := func() bool {
		for _, t := range st.Tasks {
			if t.Source == "" {
				return true
			}
		}
		return false
	}
	fill := func(source string, recs []record) {
		used := false
		for _, r := range recs {
			if r.Index < 0 || r.Index >= len(st.Tasks) || st.Tasks[r.Index].Source != "" {
				continue
			}
			t := &st.Tasks[r.Index]
			t.State, t.ExitCode, t.Reason, t.Source = r.State, r.ExitCode, r.Reason, source
			used = true
		}
		if used {
			st.Sources = append(st.Sources, source)
		}
	}
	type source struct {
		name  string
		query func() ([]record, error)
	}
	var clusterArgs []string
	if job.Cluster != "" {
		clusterArgs = []string{"--clusters=" + job.Cluster}
	}
	run := func(bin, name string, args ...string) ([]byte, error) {
		return runCommand(ctx, opts.CommandTimeout, opts.bin(name, bin), append(clusterArgs, args...)...)
	}
	sources := []source{
		{"sacct", func() ([]record, error) {
			out, err := run(opts.Sacct, "sacct", "--json", "-j", job.ID)
			if err == nil {
				return parseSacctJSON(out, job.ID, job.Shards)
			}
			if isNoAccounting(err) {
				return nil, err
			}
			// An older sacct, or one built without the JSON serializer.
			if out, err = run(opts.Sacct, "sacct", "--parsable2", "--noheader", "--format=JobID,State,ExitCode,Reason", "-j", job.ID); err != nil {
				return nil, err
			}
			return parseSacctParsable(out, job.ID, job.Shards)
		}},
		{"squeue", func() ([]record, error) {
			out, err := run(opts.Squeue, "squeue", "--noheader", "--array", "--jobs="+job.ID, "--format=%K|%T|%r")
			if err != nil {
				if isInvalidJob(err) {
					return nil, nil
				}
				return nil, err
			}
			return parseSqueue(out, job.Shards)
		}},
		{"scontrol", func() ([]record, error) {
			out, err := run(opts.Scontrol, "scontrol", "--oneliner", "show", "job", job.ID)
			if err != nil {
				if isInvalidJob(err) {
					return nil, nil
				}
				return nil, err
			}
			return parseScontrol(out, job.ID, job.Shards)
		}},
	}
	for _, src := range sources {
		if !missing() {
			break
		}
		recs, err := src.query()
		if ctx.Err() != nil {
			return st, fmt.Errorf("query slurm job %s: %w", job.ID, ctx.Err())
		}
		if err != nil {
			st.Notes = append(st.Notes, noteOf(err))
			continue
		}
		fill(src.name, recs)
	}
	exits := readExitFiles(job)
	if missing() {
		fill("exit file", exits)
	}
	// Some Slurm versions lose a failed task's exit code; the batch script
	// wrote it.
	for _, r := range exits {
		if t := &st.Tasks[r.Index]; t.ExitCode == nil && terminal[t.State] {
			t.ExitCode = r.ExitCode
		}
	}
	for i := range st.Tasks {
		if st.Tasks[i].Source == "" {
			st.Tasks[i].State = StateUnknown
		}
	}
	return st, nil
}

// noteOf is a short one-line account of a source's failure.
func noteOf(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// isNoAccounting: sacct answered that the cluster keeps no accounting
// (AccountingStorageType=accounting_storage/none).
func isNoAccounting(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Stderr), "accounting storage is disabled")
}

// isInvalidJob: squeue or scontrol no longer know the job (it ended longer
// than MinJobAge ago).
func isInvalidJob(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Stderr), "invalid job id")
}

// readExitFiles reads the exit codes the batch script wrote.
func readExitFiles(job Job) []record {
	var recs []record
	for i := 0; i < job.Shards; i++ {
		data, err := os.ReadFile(job.exitFile(i))
		if err != nil {
			continue
		}
		code, err := strconv.Atoi(string(bytes.TrimSpace(data)))
		if err != nil {
			continue
		}
		state := StateCompleted
		if code != 0 {
			state = StateFailed
		}
		recs = append(recs, record{Index: i, State: state, ExitCode: &code})
	}
	return recs
}

// parseIndices expands Slurm's array index expressions ("3", "0-7",
// "[1-3,5]", "0-9:2", "1-4%2") into the indices below n.
func parseIndices(s string, n int) ([]int, error) {
	s = strings.Trim(strings.TrimSpace(s), "[]")
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		step := 1
		if r, st, ok := strings.Cut(part, ":"); ok {
			v, err := strconv.Atoi(st)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("bad array step in %q", s)
			}
			part, step = r, v
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad array index %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("bad array index %q", s)
			}
		}
		for i := a; i <= b && i < n; i += step {
			if i >= 0 {
				seen[i] = true
			}
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out, nil
}

// exitCodeOf reads Slurm's "EXIT:SIGNAL" form ("3:0", "0:9").
func exitCodeOf(s string) *int {
	code, sig, _ := strings.Cut(strings.TrimSpace(s), ":")
	c, err := strconv.Atoi(code)
	if err != nil {
		return nil
	}
	if n, err := strconv.Atoi(sig); err == nil && n != 0 && c == 0 {
		c = 128 + n // killed by a signal, as a shell reports it
	}
	return &c
}
