package kerneldir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/safefile"
)

// loadSoon is load with a hang guard: a hostile dir must be refused, not
// block Load.
func loadSoon(t *testing.T, dir string) (*Task, error) {
	t.Helper()
	type res struct {
		task *Task
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		task, err := load(t, dir)
		ch <- res{task, err}
	}()
	select {
	case r := <-ch:
		return r.task, r.err
	case <-time.After(2 * time.Minute):
		t.Fatal("Load blocked")
		return nil, nil
	}
}

// TestLoadHostileDirs: FIFOs, links to devices or out of the dir, and
// oversized files are refused with one line naming the file, as invalid
// input; none blocks or exhausts memory.
func TestLoadHostileDirs(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "problem.py")
	if err := os.WriteFile(outside, []byte(goodProblem), 0o644); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"problem.py": goodProblem, "input.py": goodKernel}
	fifo := func(name string) func(dir string) error {
		return func(dir string) error { return syscall.Mkfifo(filepath.Join(dir, name), 0o644) }
	}
	link := func(name, target string) func(dir string) error {
		return func(dir string) error { return os.Symlink(target, filepath.Join(dir, name)) }
	}
	big := func(name string, size int) func(dir string) error {
		return func(dir string) error {
			return os.WriteFile(filepath.Join(dir, name), []byte("#"+strings.Repeat("x", size)), 0o644)
		}
	}
	cases := []struct {
		name string
		drop string // a base file left out
		make func(dir string) error
		want []string
	}{
		{"fifo problem.py", "problem.py", fifo("problem.py"), []string{"problem.py is a FIFO"}},
		{"fifo input.py", "input.py", fifo("input.py"), []string{"input.py is a FIFO"}},
		{"fifo kernel.py", "input.py", fifo("kernel.py"), []string{"kernel.py is a FIFO"}},
		{"fifo test.py", "", fifo("test.py"), []string{"test.py is a FIFO"}},
		{"fifo kagent.yaml", "", fifo("kagent.yaml"), []string{"kagent.yaml is a FIFO"}},
		{"kagent.yaml to /dev/zero", "", link("kagent.yaml", "/dev/zero"), []string{"kagent.yaml is a symbolic link to /dev/zero, outside"}},
		{"problem.py to /dev/zero", "problem.py", link("problem.py", "/dev/zero"), []string{"problem.py is a symbolic link to /dev/zero"}},
		{"problem.py to a file outside", "problem.py", link("problem.py", outside), []string{"problem.py is a symbolic link to " + outside}},
		{"dangling input.py", "input.py", link("input.py", "gone.py"), []string{"input.py is a symbolic link that leads nowhere"}},
		{"problem.py a folder", "problem.py", func(dir string) error { return os.Mkdir(filepath.Join(dir, "problem.py"), 0o755) }, []string{"problem.py is a folder"}},
		{"oversized problem.py", "problem.py", big("problem.py", safefile.MaxPython), []string{"problem.py is 4.0 MiB, over kagent's limit of 4.0 MiB"}},
		{"oversized kagent.yaml", "", big("kagent.yaml", safefile.MaxYAML), []string{"kagent.yaml is 1.0 MiB, over kagent's limit of 1.0 MiB"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range base {
				if k != tc.drop {
					files[k] = v
				}
			}
			dir := makeDir(t, files)
			if err := tc.make(dir); err != nil {
				t.Fatal(err)
			}
			_, err := loadSoon(t, dir)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load = %v, want ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q spans lines or does not name %s", err, dir)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestLoadInnerLinks: links that stay inside the kernel dir are read.
func TestLoadInnerLinks(t *testing.T) {
	dir := makeDir(t, map[string]string{"ref.py": goodProblem})
	_ = os.MkdirAll(filepath.Join(dir, "k"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "k", "kernel_v2.py"), []byte(goodKernel), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"problem.py": "ref.py", "input.py": "k/kernel_v2.py"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	task, err := loadSoon(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if task.ProblemSource != goodProblem || task.KernelSource != goodKernel {
		t.Errorf("sources not read through the links")
	}
}
