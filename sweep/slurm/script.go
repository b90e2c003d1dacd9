package slurm

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// IndexPlaceholder, inside an argument of Spec.Args, stands for the array
// task's index (0 to Shards-1): "{index}/4" becomes "2/4" in task 2.
const IndexPlaceholder = "{index}"

// Files under DIR/slurm/.
const (
	subdir     = "slurm"
	recordFile = "job.json"
	scriptFile = "sweep.sbatch"
	logPattern = "task-%a.log" // Slurm's %a: the array task index
)

// Options are what the array job asks of Slurm. Zero values leave the
// cluster's defaults.
type Options struct {
	Partition   string   // --partition
	Time        string   // --time, in Slurm's format: "90", "2:00:00", "1-00:00:00"
	Gres        string   // --gres, e.g. "gpu:1" (one GPU per task)
	CPUsPerTask int      // --cpus-per-task
	Mem         string   // --mem, e.g. "64G"
	JobName     string   // --job-name; default "kagent-sweep"
	MaxParallel int      // run at most this many tasks at once (--array=0-N%M); 0: no limit
	ExtraArgs   []string // more sbatch arguments, passed as given (e.g. "--account=abc", "--qos=high")

	// Paths of the Slurm commands; empty: the name, looked up on PATH.
	Sbatch, Sacct, Squeue, Scontrol string
	// CommandTimeout bounds each call of a Slurm command; 0: DefaultCommandTimeout.
	CommandTimeout time.Duration
}

// Spec is the work: Shards tasks, each running Args in WorkDir.
type Spec struct {
	// Dir is the sweep dir (absolute, on a file system every node sees); the
	// batch script, the job record and the task logs go under Dir/slurm.
	Dir string
	// Shards is the number of array tasks (1 or more).
	Shards int
	// Args is one task's command line, Args[0] the program (an absolute path
	// that exists on the compute nodes). IndexPlaceholder in any argument is
	// replaced by the task's index.
	Args []string
	// WorkDir is where tasks start; empty: Dir.
	WorkDir string
}

func (o Options) bin(name, set string) string {
	if set != "" {
		return set
	}
	return name
}

// Validate reports what is wrong with the options.
func (o Options) Validate() error {
	if o.CPUsPerTask < 0 {
		return fmt.Errorf("%w: cpus per task %d < 0", ErrInvalid, o.CPUsPerTask)
	}
	if o.MaxParallel < 0 {
		return fmt.Errorf("%w: max parallel %d < 0", ErrInvalid, o.MaxParallel)
	}
	for name, v := range map[string]string{"partition": o.Partition, "time": o.Time, "gres": o.Gres, "mem": o.Mem, "job name": o.JobName} {
		if strings.ContainsAny(v, " \t\r\n'\"") {
			return fmt.Errorf("%w: %s %q has spaces or quotes", ErrInvalid, name, v)
		}
	}
	return nil
}

// Validate reports what is wrong with the spec.
func (s Spec) Validate() error {
	switch {
	case s.Shards < 1:
		return fmt.Errorf("%w: %d shards (want 1 or more)", ErrInvalid, s.Shards)
	case !filepath.IsAbs(s.Dir):
		return fmt.Errorf("%w: sweep dir %q is not absolute", ErrInvalid, s.Dir)
	case s.WorkDir != "" && !filepath.IsAbs(s.WorkDir):
		return fmt.Errorf("%w: work dir %q is not absolute", ErrInvalid, s.WorkDir)
	case len(s.Args) == 0 || s.Args[0] == "":
		return fmt.Errorf("%w: no command", ErrInvalid)
	}
	// Paths go into #SBATCH lines and Slurm file patterns, where spaces,
	// quotes, '%' and '\' are not safe.
	for _, p := range []string{s.Dir, s.WorkDir} {
		if strings.ContainsAny(p, " \t\r\n'\"%\\") {
			return fmt.Errorf("%w: path %q has spaces, quotes, %% or \\ (Slurm cannot take it in #SBATCH lines)", ErrInvalid, p)
		}
	}
	for _, a := range s.Args {
		if strings.ContainsAny(a, "\x00\n\r") {
			return fmt.Errorf("%w: argument %q has a newline or NUL", ErrInvalid, a)
		}
	}
	return nil
}

func (s Spec) workDir() string {
	if s.WorkDir != "" {
		return s.WorkDir
	}
	return s.Dir
}

// Script renders the batch script of the array job. The resource options are
// #SBATCH lines, so the script can be resubmitted by hand
// (`sbatch --array=0-N DIR/slurm/sweep.sbatch`).
func Script(spec Spec, opts Options) (string, error) {
	if err := spec.Validate(); err != nil {
		return "", err
	}
	if err := opts.Validate(); err != nil {
		return "", err
	}
	dir := filepath.Join(spec.Dir, subdir)
	name := opts.JobName
	if name == "" {
		name = "kagent-sweep"
	}
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("#!/bin/bash")
	line("# Written by kagent: one Slurm array task per sweep shard (%d shards).", spec.Shards)
	line("#SBATCH --job-name=%s", name)
	line("#SBATCH --output=%s", filepath.Join(dir, logPattern))
	line("#SBATCH --chdir=%s", spec.workDir())
	if opts.Partition != "" {
		line("#SBATCH --partition=%s", opts.Partition)
	}
	if opts.Time != "" {
		line("#SBATCH --time=%s", opts.Time)
	}
	if opts.Gres != "" {
		line("#SBATCH --gres=%s", opts.Gres)
	}
	if opts.CPUsPerTask > 0 {
		line("#SBATCH --cpus-per-task=%d", opts.CPUsPerTask)
	}
	if opts.Mem != "" {
		line("#SBATCH --mem=%s", opts.Mem)
	}
	line("set -u")
	line(`task=${SLURM_ARRAY_TASK_ID:?not started as a Slurm array task}`)
	line(`echo "kagent: slurm job ${SLURM_ARRAY_JOB_ID:-?} task $task of %d on $(hostname) at $(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ)"`, spec.Shards)
	exitFile := shellWithIndex(filepath.Join(dir, "task-"+IndexPlaceholder+".exit"), `"$task"`)
	line("rm -f %s", exitFile)
	args := make([]string, len(spec.Args))
	for i, a := range spec.Args {
		args[i] = shellWithIndex(a, `"$task"`)
	}
	line("%s", strings.Join(args, " "))
	line("rc=$?")
	line(`echo "$rc" > %s`, exitFile)
	line(`echo "kagent: task $task exited with $rc at $(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ)"`)
	line(`exit "$rc"`)
	return b.String(), nil
}

// sbatchArgs are the command-line arguments of the submission.
func sbatchArgs(spec Spec, opts Options, script string) []string {
	array := "--array=0-" + strconv.Itoa(spec.Shards-1)
	if opts.MaxParallel > 0 {
		array += "%" + strconv.Itoa(opts.MaxParallel)
	}
	args := []string{"--parsable", array}
	args = append(args, opts.ExtraArgs...)
	return append(args, script)
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWithIndex quotes s for bash with each IndexPlaceholder replaced by the
// (already quoted) shell expression index.
func shellWithIndex(s, index string) string {
	parts := strings.Split(s, IndexPlaceholder)
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString(index)
		}
		if p != "" {
			b.WriteString(shellQuote(p))
		}
	}
	if b.Len() == 0 {
		return "''"
	}
	return b.String()
}
