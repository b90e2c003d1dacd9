package main

// Scale-out back-ends of `kagent sweep`: --backend slurm submits the sweep
// as a Slurm array job (one task per shard) and records it in the sweep dir,
// where `kagent sweep status DIR` follows it and `kagent sweep merge DIR`
// checks it before combining the shards; --backend k8s --emit FILE writes a
// Kubernetes Indexed Job doing the same. Every task runs the same `kagent
// sweep` command line with --shard i/n.
//
// withBackends decorates the sweep command that sweep.go builds: it adds the
// flags and wraps the actions, so the local sweep code does not change.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/sweep"
	"github.com/kagent-kernels/kagent/sweep/k8s"
	"github.com/kagent-kernels/kagent/sweep/slurm"
)

// Back-end names of --backend.
const (
	backendLocal = "local"
	backendSlurm = "slurm"
	backendK8s   = "k8s"
)

// backendFlags are the flags withBackends adds to `kagent sweep`. Each can
// also come from the environment variable it names, so a cluster's settings
// can live in a shell profile.
func backendFlags() []cli.Flag {
	env := func(name string) []string { return []string{"KAGENT_" + name} }
	return []cli.Flag{
		&cli.StringFlag{Name: "backend", Value: backendLocal, EnvVars: env("SWEEP_BACKEND"), Usage: "where the sweep runs: local (this machine), slurm (an array job, one task per shard) or k8s (write an Indexed Job with --emit)"},
		&cli.IntFlag{Name: "shards", Usage: "number of shards (array tasks, pods) for --backend slurm or k8s"},
		&cli.StringFlag{Name: "remote-kagent", Usage: "the kagent program the tasks run (default: this binary for slurm, kagent on the image's PATH for k8s)"},
		&cli.BoolFlag{Name: "wait", Usage: "slurm: wait for the job to end, then merge the shards"},
		&cli.DurationFlag{Name: "poll", Value: 10 * time.Second, Usage: "slurm: how often --wait asks Slurm"},

		&cli.StringFlag{Name: "slurm-partition", EnvVars: env("SLURM_PARTITION"), Usage: "sbatch --partition"},
		&cli.StringFlag{Name: "slurm-time", EnvVars: env("SLURM_TIME"), Usage: "sbatch --time: each task's limit (e.g. 4:00:00)"},
		&cli.StringFlag{Name: "slurm-gres", EnvVars: env("SLURM_GRES"), Usage: "sbatch --gres (default gpu:1, none on the cpu and noop platforms; none asks for nothing)"},
		&cli.IntFlag{Name: "slurm-cpus", EnvVars: env("SLURM_CPUS"), Usage: "sbatch --cpus-per-task"},
		&cli.StringFlag{Name: "slurm-mem", EnvVars: env("SLURM_MEM"), Usage: "sbatch --mem (e.g. 64G)"},
		&cli.IntFlag{Name: "slurm-max-parallel", EnvVars: env("SLURM_MAX_PARALLEL"), Usage: "run at most N tasks at once (--array=0-M%N)"},
		&cli.StringFlag{Name: "slurm-job-name", EnvVars: env("SLURM_JOB_NAME"), Usage: "sbatch --job-name (default kagent-sweep)"},
		&cli.StringSliceFlag{Name: "slurm-arg", EnvVars: env("SLURM_ARGS"), Usage: "more sbatch arguments, as given (repeat the flag: --slurm-arg=--account=abc --slurm-arg=--qos=high)"},

		&cli.StringFlag{Name: "emit", Usage: "k8s: write the Job manifest to `FILE` (- for stdout)"},
		&cli.StringFlag{Name: "k8s-image", EnvVars: env("K8S_IMAGE"), Usage: "k8s: container image with kagent, Python, torch and triton"},
		&cli.StringFlag{Name: "k8s-name", Value: k8s.DefaultName, Usage: "k8s: the Job's name"},
		&cli.StringFlag{Name: "k8s-namespace", EnvVars: env("K8S_NAMESPACE"), Usage: "k8s: the Job's namespace (default: kubectl's)"},
		&cli.StringFlag{Name: "k8s-pvc", EnvVars: env("K8S_PVC"), Usage: "k8s: PersistentVolumeClaim holding the sweep dir"},
		&cli.StringFlag{Name: "k8s-host-path", Usage: "k8s: node directory holding the sweep dir (instead of --k8s-pvc)"},
		&cli.StringFlag{Name: "k8s-mount", Value: k8s.DefaultMountPath, Usage: "k8s: where the volume is mounted: the sweep dir (--out) inside the pods"},
		&cli.IntFlag{Name: "k8s-gpus", Value: 1, Usage: "k8s: GPUs per pod (0 on the cpu and noop platforms)"},
		&cli.StringFlag{Name: "k8s-gpu-resource", Value: k8s.DefaultGPUResource, Usage: "k8s: the GPU resource name (amd.com/gpu on ROCm)"},
		&cli.StringFlag{Name: "k8s-cpu", Usage: "k8s: CPU request per pod (e.g. 8)"},
		&cli.StringFlag{Name: "k8s-memory", Usage: "k8s: memory request and limit per pod (e.g. 64Gi)"},
		&cli.StringFlag{Name: "k8s-secret", EnvVars: env("K8S_SECRET"), Usage: "k8s: Secret whose keys become environment variables (the LLM API key)"},
		&cli.StringSliceFlag{Name: "k8s-env", Usage: "k8s: KEY=VALUE environment variable of the pods (repeatable)"},
		&cli.StringFlag{Name: "k8s-pull-policy", Usage: "k8s: imagePullPolicy: Always, IfNotPresent or Never"},
		&cli.IntFlag{Name: "k8s-backoff-limit", Value: -1, Usage: "k8s: failed pods tolerated before the Job fails (-1: Kubernetes' default, 6)"},
		&cli.DurationFlag{Name: "k8s-deadline", Usage: "k8s: activeDeadlineSeconds of the Job (e.g. 12h)"},
	}
}

// backendOnly are the flags a task must not get again: the back-end's own,
// and the shard, which each task gets from its index.
func backendOnly(name string) bool {
	if name == "shard" || name == "out" || strings.HasPrefix(name, "slurm-") || strings.HasPrefix(name, "k8s-") {
		return true
	}
	return slices.Contains([]string{"backend", "shards", "remote-kagent", "wait", "poll", "emit"}, name)
}

// withBackends adds --backend and its flags to the sweep command, runs
// non-local back-ends in place of the local action, shows the Slurm job in
// `status` and checks it in `merge`.
func withBackends(cmd *cli.Command) *cli.Command {
	cmd.Flags = append(cmd.Flags, backendFlags()...)
	local := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		backend := c.String("backend")
		if backend == backendLocal {
			return local(c)
		}
		if backend != backendSlurm && backend != backendK8s {
			return usageError("--backend %q: give local, slurm or k8s", backend)
		}
		if c.IsSet("shard") {
			return usageError("--shard is for one task of a sweep; --backend %s makes the shards itself (give --shards N)", backend)
		}
		s, err := sweepArgs(c)
		if err != nil {
			return err
		}
		if backend == backendSlurm {
			return slurmSweep(c, s)
		}
		return k8sSweep(c, s)
	}
	for _, sub := range cmd.Subcommands {
		switch orig := sub.Action; sub.Name {
		case "status":
			sub.Action = func(c *cli.Context) error { return slurmStatus(c, orig) }
		case "merge":
			sub.Action = func(c *cli.Context) error { return slurmMerge(c, orig) }
		}
	}
	return cmd
}

// taskArgs is the command line every task runs: kagent [global flags]
// sweep <the flags given, less the back-end's> --out DIR --shard {index}/n.
// Flags that look like secrets are never written out: the tasks get them
// from the environment (Slurm passes the submitter's on) or a Secret.
func taskArgs(c *cli.Context, program, dir, index string, shards int) ([]string, error) {
	args := []string{program}
	if c.IsSet("log-level") {
		args = append(args, "--log-level="+c.String("log-level"))
	}
	args = append(args, "sweep")
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if backendOnly(name) || !c.IsSet(name) || secretName(name) {
			continue
		}
		switch f.(type) {
		case *cli.StringFlag, *cli.PathFlag:
			args = append(args, "--"+name+"="+c.String(name))
		case *cli.IntFlag:
			args = append(args, "--"+name+"="+strconv.Itoa(c.Int(name)))
		case *cli.Float64Flag:
			args = append(args, "--"+name+"="+strconv.FormatFloat(c.Float64(name), 'g', -1, 64))
		case *cli.BoolFlag:
			args = append(args, "--"+name+"="+strconv.FormatBool(c.Bool(name)))
		case *cli.DurationFlag:
			args = append(args, "--"+name+"="+c.Duration(name).String())
		case *cli.StringSliceFlag:
			for _, v := range c.StringSlice(name) {
				args = append(args, "--"+name+"="+v)
			}
		default:
			return nil, fmt.Errorf("sweep: cannot pass --%s (%T) on to the tasks", name, f)
		}
	}
	return append(args, "--out="+dir, "--shard="+index+"/"+strconv.Itoa(shards)), nil
}

// secretName reports whether a flag's name says it holds a secret.
func secretName(name string) bool {
	for _, s := range []string{"key", "token", "secret", "password"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// backendShards checks --shards against the problems the sweep selects, so
// a bad selection fails here and not in every task.
func backendShards(c *cli.Context, s *sweepSetup) (int, error) {
	n := c.Int("shards")
	if n < 1 {
		return 0, usageError("--backend %s needs --shards N: the number of array tasks or pods", c.String("backend"))
	}
	_, all, err := sweep.FindProblems(s.source, s.level)
	if err != nil {
		return 0, withCode(ExitUsage, fmt.Errorf("sweep: %w", err))
	}
	problems := sweep.Select(all, s.selection)
	if len(problems) == 0 {
		return 0, withCode(ExitUsage, fmt.Errorf("sweep: %w: none of the %d problems in %s has an id in %s", sweep.ErrNoProblems, len(all), s.source, s.selection))
	}
	if n > len(problems) {
		fmt.Fprintf(c.App.ErrWriter, "kagent: %d shards for %d problems: using %d\n", n, len(problems), len(problems))
		n = len(problems)
	}
	return n, nil
}

// checkLLM fails early, as each task would, when nothing can write first
// kernels. With client set it also builds the LLM client as a task will
// (Slurm tasks get this environment, so a missing API key shows here); a
// Kubernetes pod gets its keys from a Secret, so only the configuration is
// checked for it.
func checkLLM(c *cli.Context, s *sweepSetup, client bool) error {
	noLLM := withCode(ExitUsage, fmt.Errorf("sweep: %w, or give --kernels DIR of existing kernel dirs", errNoLLMForGeneration))
	if !client {
		if s.cfg.LLM.Model == "" && s.cfg.LLM.Replay == "" && c.String("kernels") == "" {
			return noLLM
		}
		return nil
	}
	shared := s.cfg
	shared.Budget = configs.BudgetConfig{}
	cl, err := generationClient(shared, c.String("llm-replay-match"), logger(c))
	if err != nil {
		return err
	}
	if cl == nil && c.String("kernels") == "" {
		return noLLM
	}
	if closer, ok := cl.(io.Closer); ok {
		_ = closer.Close()
	}
	return nil
}

// slurmSweep submits the sweep as an array job.
func slurmSweep(c *cli.Context, s *sweepSetup) error {
	n, err := backendShards(c, s)
	if err != nil {
		return err
	}
	if err := checkLLM(c, s, true); err != nil {
		return err
	}
	program := c.String("remote-kagent")
	if program == "" {
		if program, err = os.Executable(); err != nil {
			return fmt.Errorf("sweep: find this program for the tasks: %w (give --remote-kagent)", err)
		}
	}
	args, err := taskArgs(c, program, s.dir, slurm.IndexPlaceholder, n)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	opts := slurmOptions(c, s.cfg)
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	job, err := slurm.Submit(c.Context, slurm.Spec{Dir: s.dir, Shards: n, Args: args, WorkDir: wd}, opts)
	if err != nil {
		return slurmError(err)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "kagent: submitted slurm job %s: %d tasks, one per shard of %s (level %d, problems %s), into %s\n",
		job.ID, n, s.source, s.level, s.selection, s.dir)
	fmt.Fprintf(w, "task logs: %s\n", filepath.Join(filepath.Dir(job.Log(0)), "task-<i>.log"))
	if !c.Bool("wait") {
		fmt.Fprintf(w, "follow it: kagent sweep status %s\nwhen it has ended: kagent sweep merge %s\n", s.dir, s.dir)
		return nil
	}
	st, err := waitSlurm(c.Context, c, job, opts)
	if err != nil {
		return slurmError(err)
	}
	sum, mergeErr := sweep.Merge(s.dir, sweep.MergeOptions{})
	if mergeErr == nil {
		printSummary(w, sum)
	}
	if err := st.Err(); err != nil {
		return slurmError(err)
	}
	return mergeErr
}

// slurmOptions reads the Slurm flags. The default gres asks for one GPU per
// task unless the sweep runs on the cpu or noop platform.
func slurmOptions(c *cli.Context, cfg configs.Config) slurm.Options {
	gres := c.String("slurm-gres")
	switch {
	case gres == "none":
		gres = ""
	case !c.IsSet("slurm-gres"):
		gres = "gpu:1"
		if p := cfg.PlatformName(); p == configs.PlatformCPU || p == configs.PlatformNoop {
			gres = ""
		}
	}
	return slurm.Options{
		Partition: c.String("slurm-partition"), Time: c.String("slurm-time"), Gres: gres,
		CPUsPerTask: c.Int("slurm-cpus"), Mem: c.String("slurm-mem"), JobName: c.String("slurm-job-name"),
		MaxParallel: c.Int("slurm-max-parallel"), ExtraArgs: c.StringSlice("slurm-arg"),
	}
}

// waitSlurm polls the job until no task is pending or running, printing a
// line whenever the counts change.
func waitSlurm(ctx context.Context, c *cli.Context, job slurm.Job, opts slurm.Options) (slurm.Status, error) {
	poll := c.Duration("poll")
	if poll <= 0 {
		poll = 10 * time.Second
	}
	last := ""
	for {
		st, err := slurm.Query(ctx, job, opts)
		if err != nil {
			return st, err
		}
		if line := taskCounts(st); line != last {
			fmt.Fprintf(c.App.Writer, "%s slurm job %s: %s\n", time.Now().Format("15:04:05"), job.ID, line)
			last = line
		}
		if st.Count(slurm.IsActive) == 0 {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("wait for slurm job %s: %w (the job goes on; follow it with kagent sweep status %s)", job.ID, ctx.Err(), job.Dir)
		case <-time.After(poll):
		}
	}
}

// taskCounts is "2 RUNNING, 1 PENDING" in the order of the tasks.
func taskCounts(st slurm.Status) string {
	counts := map[slurm.State]int{}
	var order []slurm.State
	for _, t := range st.Tasks {
		if counts[t.State] == 0 {
			order = append(order, t.State)
		}
		counts[t.State]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[s], s)
	}
	return strings.Join(parts, ", ")
}

// slurmError gives Slurm's errors their exit codes.
func slurmError(err error) error {
	switch {
	case errors.Is(err, slurm.ErrNotInstalled):
		return withCode(ExitUnavailable, err)
	case errors.Is(err, slurm.ErrRejected), errors.Is(err, slurm.ErrInvalid):
		return withCode(ExitUsage, err)
	}
	return err
}

// slurmStatus runs `kagent sweep status` and, when the dir holds a Slurm
// job, shows its tasks; it fails (exit 1) when tasks failed. Before the
// first shard wrote anything there is no sweep status yet, only the job's.
func slurmStatus(c *cli.Context, local cli.ActionFunc) error {
	dir := c.Args().First()
	if c.NArg() != 1 || !slurm.Recorded(dir) || c.Bool("json") {
		return local(c)
	}
	localErr := local(c)
	if localErr != nil && !errors.Is(localErr, sweep.ErrNoResults) {
		return localErr
	}
	job, err := slurm.Load(dir)
	if err != nil {
		return err
	}
	st, err := slurm.Query(c.Context, job, slurm.Options{})
	if err != nil {
		return slurmError(err)
	}
	w := c.App.Writer
	if localErr != nil {
		fmt.Fprintf(w, "sweep %s: no shard has written results yet\n", absPath(dir))
	}
	fmt.Fprintf(w, "\nslurm job %s, submitted %s: %s\n", job.ID, stamp(job.Submitted), taskCounts(st))
	t := newTable(w)
	t.row("TASK", "SHARD", "STATE", "EXIT", "REASON", "FROM", "LOG")
	for _, task := range st.Tasks {
		exit := "-"
		if task.ExitCode != nil {
			exit = strconv.Itoa(*task.ExitCode)
		}
		t.row(strconv.Itoa(task.Index), fmt.Sprintf("%d/%d", task.Index, job.Shards), string(task.State), exit,
			orDash(task.Reason), orDash(task.Source), task.Log)
	}
	_ = t.flush()
	for _, n := range st.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if err := st.Err(); err != nil && !errors.Is(err, slurm.ErrActive) {
		return err
	}
	return nil
}

// slurmMerge refuses to merge while the dir's Slurm job still runs; when
// tasks failed it merges what the others wrote and then names the failed
// tasks and their logs.
func slurmMerge(c *cli.Context, local cli.ActionFunc) error {
	dir := c.Args().First()
	if c.NArg() != 1 || !slurm.Recorded(dir) {
		return local(c)
	}
	job, err := slurm.Load(dir)
	if err != nil {
		return err
	}
	st, err := slurm.Query(c.Context, job, slurm.Options{})
	if err != nil {
		return slurmError(err)
	}
	if n := st.Count(slurm.IsActive); n > 0 {
		return fmt.Errorf("sweep merge: slurm job %s has %d of %d task(s) pending or running; follow it with kagent sweep status %s and merge when it has ended",
			job.ID, n, job.Shards, dir)
	}
	localErr := local(c)
	if err := st.Err(); err != nil {
		return err
	}
	return localErr
}

// k8sSweep writes the sweep as a Kubernetes Indexed Job.
func k8sSweep(c *cli.Context, s *sweepSetup) error {
	emit := c.String("emit")
	if emit == "" {
		return usageError("--backend k8s needs --emit FILE (- for stdout): kagent writes the Job, kubectl applies it")
	}
	n, err := backendShards(c, s)
	if err != nil {
		return err
	}
	if err := checkLLM(c, s, false); err != nil {
		return err
	}
	program := c.String("remote-kagent")
	if program == "" {
		program = "kagent"
	}
	mount := c.String("k8s-mount")
	args, err := taskArgs(c, program, mount, k8s.IndexPlaceholder, n)
	if err != nil {
		return err
	}
	gpus := c.Int("k8s-gpus")
	if p := s.cfg.PlatformName(); !c.IsSet("k8s-gpus") && (p == configs.PlatformCPU || p == configs.PlatformNoop) {
		gpus = 0
	}
	env := map[string]string{}
	for _, kv := range c.StringSlice("k8s-env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageError("--k8s-env %q: give KEY=VALUE", kv)
		}
		env[k] = v
	}
	opts := k8s.Options{
		Name: c.String("k8s-name"), Namespace: c.String("k8s-namespace"), Image: c.String("k8s-image"),
		ImagePullPolicy: c.String("k8s-pull-policy"), GPUs: gpus, GPUResource: c.String("k8s-gpu-resource"),
		CPU: c.String("k8s-cpu"), Memory: c.String("k8s-memory"),
		PVC: c.String("k8s-pvc"), HostPath: c.String("k8s-host-path"), MountPath: mount,
		EnvFromSecret: c.String("k8s-secret"), Env: env,
		ActiveDeadlineSeconds: int(c.Duration("k8s-deadline").Seconds()),
	}
	if b := c.Int("k8s-backoff-limit"); b >= 0 {
		opts.BackoffLimit = &b
	}
	manifest, err := k8s.Manifest(k8s.Spec{Shards: n, Args: args}, opts)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if emit == "-" {
		_, err := c.App.Writer.Write(manifest)
		return err
	}
	if err := os.WriteFile(emit, manifest, 0o644); err != nil {
		return fmt.Errorf("sweep: write the kubernetes job: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "kagent: wrote %s: an Indexed Job of %d pods, one per shard, writing into the volume at %s\n"+
		"run it: kubectl apply -f %s\nwhen it has completed, where the volume is mounted: kagent sweep merge DIR\n",
		emit, n, mount, emit)
	return nil
}
