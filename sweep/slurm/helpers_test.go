package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin writes an executable shell script named name into dir.
func fakeBin(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeSlurm is a set of fake Slurm commands in a temp dir. Each logs its
// arguments to NAME.args; their bodies are set per test.
type fakeSlurm struct {
	dir  string
	opts Options
}

func newFakeSlurm(t *testing.T) *fakeSlurm {
	f := &fakeSlurm{dir: t.TempDir()}
	f.opts = Options{
		Sbatch:   filepath.Join(f.dir, "sbatch"),
		Sacct:    filepath.Join(f.dir, "sacct"),
		Squeue:   filepath.Join(f.dir, "squeue"),
		Scontrol: filepath.Join(f.dir, "scontrol"),
	}
	// By default: no accounting, and slurmctld does not know the job.
	f.set(t, "sacct", `echo "Slurm accounting storage is disabled" >&2; exit 1`)
	f.set(t, "squeue", `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`)
	f.set(t, "scontrol", `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`)
	f.set(t, "sbatch", `echo 4242`)
	return f
}

// set gives the fake command name a body; its arguments are appended to
// NAME.args first, one call per line.
func (f *fakeSlurm) set(t *testing.T, name, body string) {
	t.Helper()
	fakeBin(t, f.dir, name, `echo "$*" >> "`+filepath.Join(f.dir, name+".args")+`"`+"\n"+body)
}

// calls are the argument lines the fake command name was called with.
func (f *fakeSlurm) calls(name string) []string {
	data, _ := os.ReadFile(filepath.Join(f.dir, name+".args"))
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// catFile is a fake body printing testdata/name.
func catFile(t *testing.T, name string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return `cat '` + abs + `'`
}
