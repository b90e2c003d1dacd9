package slurm

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestScriptDirectives(t *testing.T) {
	spec := Spec{Dir: "/shared/sweeps/l1", Shards: 4, Args: []string{"/opt/kagent/bin/kagent", "sweep", "--shard", "{index}/4"}}
	tests := []struct {
		name    string
		opts    Options
		want    []string
		notWant []string
	}{
		{"defaults", Options{},
			[]string{"#SBATCH --job-name=kagent-sweep", "#SBATCH --output=/shared/sweeps/l1/slurm/task-%a.log", "#SBATCH --chdir=/shared/sweeps/l1"},
			[]string{"--partition", "--time", "--gres", "--cpus-per-task", "--mem"}},
		{"resources", Options{Partition: "h200", Time: "4:00:00", Gres: "gpu:1", CPUsPerTask: 16, Mem: "128G", JobName: "l1"},
			[]string{"#SBATCH --partition=h200", "#SBATCH --time=4:00:00", "#SBATCH --gres=gpu:1", "#SBATCH --cpus-per-task=16", "#SBATCH --mem=128G", "#SBATCH --job-name=l1"},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Script(spec, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(s, w+"\n") {
					t.Errorf("script lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(s, w) {
					t.Errorf("script has %q:\n%s", w, s)
				}
			}
			if !strings.Contains(s, `'/opt/kagent/bin/kagent' 'sweep' '--shard' "$task"'/4'`) {
				t.Errorf("command line not as expected:\n%s", s)
			}
		})
	}
}

func TestSbatchArgs(t *testing.T) {
	spec := Spec{Dir: "/d", Shards: 3, Args: []string{"k"}}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"plain", Options{}, "--parsable --array=0-2 /d/slurm/sweep.sbatch"},
		{"throttled with extras", Options{MaxParallel: 2, ExtraArgs: []string{"--account=gpu", "--qos", "high"}},
			"--parsable --array=0-2%2 --account=gpu --qos high /d/slurm/sweep.sbatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(sbatchArgs(spec, tt.opts, "/d/slurm/sweep.sbatch"), " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestScriptRunsTheTask runs the generated script with bash as Slurm would,
// and checks the task saw its own index and every argument intact, and that
// the exit code was recorded.
func TestScriptRunsTheTask(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "slurm"), 0o755); err != nil {
		t.Fatal(err)
	}
	prog := fakeBin(t, dir, "prog", `for a in "$@"; do printf '%s\n' "$a"; done; exit 7`)
	args := []string{prog, "--shard", "{index}/3", "it's $HOME `x` \\ \"q\"", "", "a{index}b{index}"}
	s, err := Script(Spec{Dir: dir, Shards: 3, Args: args}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", s)
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_JOB_ID=9")
	cmd.Dir = dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("script exit: %v, want 7\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	want := []string{"--shard", "2/3", "it's $HOME `x` \\ \"q\"", "", "a2b2"}
	if len(lines) < len(want)+1 || strings.Join(lines[1:len(want)+1], "\n") != strings.Join(want, "\n") {
		t.Errorf("task saw:\n%s\nwant the args:\n%s", out, strings.Join(want, "\n"))
	}
	code, err := os.ReadFile(filepath.Join(dir, "slurm", "task-2.exit"))
	if err != nil || strings.TrimSpace(string(code)) != "7" {
		t.Errorf("exit file: %q, %v; want 7", code, err)
	}
}

func TestSpecValidate(t *testing.T) {
	good := Spec{Dir: "/d", Shards: 2, Args: []string{"/bin/kagent"}}
	tests := []struct {
		name   string
		mutate func(s *Spec)
		want   string
	}{
		{"no shards", func(s *Spec) { s.Shards = 0 }, "shards"},
		{"relative dir", func(s *Spec) { s.Dir = "runs/x" }, "not absolute"},
		{"space in dir", func(s *Spec) { s.Dir = "/my runs" }, "spaces"},
		{"percent in dir", func(s *Spec) { s.Dir = "/runs/%j" }, "%"},
		{"relative workdir", func(s *Spec) { s.WorkDir = "w" }, "work dir"},
		{"no command", func(s *Spec) { s.Args = nil }, "no command"},
		{"newline", func(s *Spec) { s.Args = []string{"/bin/kagent", "a\nb"} }, "newline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			tt.mutate(&s)
			_, err := Script(s, Options{})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want ErrInvalid mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := Script(good, Options{Partition: "a b"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("partition with a space: err %v, want ErrInvalid", err)
	}
}
