package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/configs"
)

// fakeSlurmPath puts fake sbatch, sacct, squeue and scontrol first on PATH:
// sbatch copies the script to DIR/submitted.sbatch and prints job id 77;
// sacct has no accounting; squeue prints squeueOut.
func fakeSlurmPath(t *testing.T, squeueOut string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("sbatch", `echo "$*" > "`+dir+`/sbatch.args"; for a; do s=$a; done; cp "$s" "`+dir+`/submitted.sbatch"; echo 77`)
	write("sacct", `echo "Slurm accounting storage is disabled" >&2; exit 1`)
	write("squeue", `printf '%s' '`+squeueOut+`'`)
	write("scontrol", `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// TestSweepSlurmSubmit checks what `--backend slurm` hands to sbatch
// (against fake Slurm commands), and that status and merge follow the job.
func TestSweepSlurmSubmit(t *testing.T) {
	fake := fakeSlurmPath(t, "0|RUNNING|None\n1|PENDING|Resources\n")
	t.Setenv("OPENAI_API_KEY", "sk-kagent-test-secret")
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	r := run(t, work, "--log-level", "debug", "sweep", "--kernelbench", src, "--problems", "1-4", "--platform", "cpu",
		"--llm-model", "fake", "--seeds", "2", "--out", "s", "--backend", "slurm", "--shards", "2",
		"--slurm-partition", "short", "--slurm-time", "1:00:00", "--slurm-arg=--account=kern", "--slurm-max-parallel", "1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "submitted slurm job 77: 2 tasks") {
		t.Fatalf("submit: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	script := readString(t, filepath.Join(fake, "submitted.sbatch"))
	dir := filepath.Join(work, "s")
	for _, want := range []string{
		"#SBATCH --partition=short\n", "#SBATCH --time=1:00:00\n", "#SBATCH --chdir=" + work + "\n",
		"#SBATCH --output=" + filepath.Join(dir, "slurm", "task-%a.log") + "\n",
		"'--log-level=debug' 'sweep' '--kernelbench=" + src + "' '--problems=1-4' '--seeds=2' '--platform=cpu' '--llm-model=fake' '--out=" + dir + "' '--shard='\"$task\"'/2'",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("batch script lacks %q:\n%s", want, script)
		}
	}
	for _, not := range []string{"--gres", "--backend", "--shards", "slurm-", "sk-kagent-test-secret"} {
		if strings.Contains(script, not) {
			t.Errorf("batch script has %q (cpu platform, or a back-end flag passed on):\n%s", not, script)
		}
	}
	args := readString(t, filepath.Join(fake, "sbatch.args"))
	if want := "--parsable --array=0-1%1 --account=kern " + filepath.Join(dir, "slurm", "sweep.sbatch"); strings.TrimSpace(args) != want {
		t.Errorf("sbatch %s, want %s", args, want)
	}

	r = run(t, work, "sweep", "status", "s")
	if r.code != ExitOK || !strings.Contains(r.stdout, "no shard has written results yet") ||
		!strings.Contains(r.stdout, "slurm job 77") || !strings.Contains(r.stdout, "1 RUNNING, 1 PENDING") || !strings.Contains(r.stdout, "Resources") {
		t.Errorf("status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	oneLineError(t, run(t, work, "sweep", "merge", "s"), ExitError, "slurm job 77 has 2 of 2 task(s) pending or running")
	// A second submission while the first runs is refused.
	oneLineError(t, run(t, work, "sweep", "--kernelbench", src, "--problems", "1-4", "--platform", "cpu", "--llm-model", "fake",
		"--out", "s", "--backend", "slurm", "--shards", "2"), ExitError, "job 77 has 2 pending or running task(s)", "scancel 77")
}

func TestSweepSlurmGres(t *testing.T) {
	fake := fakeSlurmPath(t, "")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	tests := []struct {
		name string
		args []string
		want string // "" for no --gres line
	}{
		{"gpu platform", []string{"--platform", "cuda"}, "#SBATCH --gres=gpu:1\n"},
		{"cpu platform", []string{"--platform", "cpu"}, ""},
		{"given", []string{"--platform", "cpu", "--slurm-gres", "gpu:h200:2"}, "#SBATCH --gres=gpu:h200:2\n"},
		{"none", []string{"--platform", "cuda", "--slurm-gres", "none"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			args := append([]string{"sweep", "--kernelbench", src, "--llm-model", "fake", "--out", "s", "--backend", "slurm", "--shards", "2"}, tt.args...)
			if r := run(t, work, args...); r.code != ExitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			script := readString(t, filepath.Join(fake, "submitted.sbatch"))
			if tt.want == "" && strings.Contains(script, "--gres") || tt.want != "" && !strings.Contains(script, tt.want) {
				t.Errorf("want %q:\n%s", tt.want, script)
			}
		})
	}
}

func TestSweepBackendErrors(t *testing.T) {
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	base := []string{"sweep", "--kernelbench", src, "--platform", "cpu", "--llm-model", "fake"}
	t.Setenv("PATH", t.TempDir()) // no Slurm commands
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown backend", []string{"--backend", "pbs"}, ExitUsage, []string{`--backend "pbs"`}},
		{"no shards", []string{"--backend", "slurm"}, ExitUsage, []string{"needs --shards N"}},
		{"shard and backend", []string{"--backend", "slurm", "--shards", "2", "--shard", "0/2"}, ExitUsage, []string{"--shard is for one task"}},
		{"no problems", []string{"--backend", "slurm", "--shards", "2", "--problems", "90-99"}, ExitUsage, []string{"no problems"}},
		{"sbatch missing", []string{"--backend", "slurm", "--shards", "2", "--remote-kagent", "/opt/kagent"}, ExitUnavailable, []string{"sbatch", "not found"}},
		{"no llm", []string{"--backend", "slurm", "--shards", "2", "--llm-model", ""}, ExitUsage, []string{"no llm configured"}},
		{"no api key", []string{"--backend", "slurm", "--shards", "2", "--llm-provider", "anthropic"}, ExitUsage, []string{"ANTHROPIC_API_KEY"}},
		{"k8s without emit", []string{"--backend", "k8s", "--shards", "2"}, ExitUsage, []string{"needs --emit FILE"}},
		{"k8s without image", []string{"--backend", "k8s", "--shards", "2", "--emit", "-", "--k8s-pvc", "v"}, ExitUsage, []string{"no image"}},
		{"k8s without volume", []string{"--backend", "k8s", "--shards", "2", "--emit", "-", "--k8s-image", "i"}, ExitUsage, []string{"persistent volume claim or a host path"}},
		{"k8s bad env", []string{"--backend", "k8s", "--shards", "2", "--emit", "-", "--k8s-image", "i", "--k8s-pvc", "v", "--k8s-env", "X"}, ExitUsage, []string{"KEY=VALUE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oneLineError(t, run(t, work, append(append([]string{}, base...), tt.args...)...), tt.code, tt.want...)
		})
	}
}

// TestSweepK8sEmit writes the Indexed Job of a sweep and checks the
// command each pod runs (the manifest's schema is checked in sweep/k8s).
func TestSweepK8sEmit(t *testing.T) {
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	r := run(t, work, "sweep", "--kernelbench", src, "--problems", "1-6", "--strategy", "greedy", "--llm-model", "gpt-x", "--out", "ignored",
		"--backend", "k8s", "--shards", "3", "--emit", "job.yaml", "--k8s-image", "ghcr.io/x/kagent:1", "--k8s-pvc", "sweeps",
		"--k8s-secret", "llm", "--k8s-env", "KAGENT_LOG_LEVEL=debug", "--k8s-deadline", "2h")
	if r.code != ExitOK || !strings.Contains(r.stdout, "kubectl apply -f job.yaml") {
		t.Fatalf("emit: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var job struct {
		Spec struct {
			CompletionMode        string `yaml:"completionMode"`
			Completions           int    `yaml:"completions"`
			Parallelism           int    `yaml:"parallelism"`
			ActiveDeadlineSeconds int    `yaml:"activeDeadlineSeconds"`
			Template              struct {
				Spec struct {
					Containers []struct {
						Image     string                       `yaml:"image"`
						Command   []string                     `yaml:"command"`
						Resources map[string]map[string]string `yaml:"resources"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal([]byte(readString(t, filepath.Join(work, "job.yaml"))), &job); err != nil {
		t.Fatal(err)
	}
	s := job.Spec
	if s.CompletionMode != "Indexed" || s.Completions != 3 || s.Parallelism != 3 || s.ActiveDeadlineSeconds != 7200 {
		t.Errorf("job spec %+v", s)
	}
	c := s.Template.Spec.Containers[0]
	want := "kagent sweep --kernelbench=" + src + " --problems=1-6 --strategy=greedy --llm-model=gpt-x --out=/sweep --shard=$(JOB_COMPLETION_INDEX)/3"
	if got := strings.Join(c.Command, " "); got != want || c.Image != "ghcr.io/x/kagent:1" {
		t.Errorf("command %q\nwant    %q", got, want)
	}
	if c.Resources["limits"]["nvidia.com/gpu"] != "1" {
		t.Errorf("resources %v, want one nvidia.com/gpu", c.Resources)
	}

	// On stdout, and with no GPU on the cpu platform.
	r = run(t, work, "sweep", "--kernelbench", src, "--platform", "cpu", "--llm-model", "fake",
		"--backend", "k8s", "--shards", "2", "--emit", "-", "--k8s-image", "i", "--k8s-host-path", "/data/s")
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "# Written by kagent") || strings.Contains(r.stdout, "nvidia.com/gpu") ||
		!strings.Contains(r.stdout, "path: /data/s") {
		t.Errorf("emit to stdout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBackendEnvListed: every KAGENT_* variable the sweep flags read is in
// the table `kagent env` prints.
func TestBackendEnvListed(t *testing.T) {
	listed := map[string]bool{}
	for _, e := range configs.Env {
		listed[e.Name] = true
	}
	for _, f := range backendFlags() {
		var vars []string
		switch f := f.(type) {
		case *cli.StringFlag:
			vars = f.EnvVars
		case *cli.IntFlag:
			vars = f.EnvVars
		case *cli.StringSliceFlag:
			vars = f.EnvVars
		}
		for _, v := range vars {
			if !listed[v] {
				t.Errorf("%s (flag --%s) is not in configs.Env", v, f.Names()[0])
			}
		}
	}
}
