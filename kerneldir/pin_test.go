package kerneldir

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadPinsProblem: the problem and test.py are read once; what the task
// points workers at is a read-only copy under the cache named by its
// SHA-256, which a later rewrite of the kernel dir does not touch.
func TestLoadPinsProblem(t *testing.T) {
	dir := makeDir(t, map[string]string{"problem.py": goodProblem, "input.py": goodKernel, "test.py": "import sys\n"})
	cache := t.TempDir()
	task, err := Load(context.Background(), dir, LoadOptions{Python: python(), CacheDir: cache, RequireKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	if task.ProblemSHA256 != Sum([]byte(goodProblem)) || task.TestSHA256 != Sum([]byte("import sys\n")) {
		t.Errorf("sums %s %s", task.ProblemSHA256, task.TestSHA256)
	}
	for path, want := range map[string]string{task.ProblemPath: goodProblem, task.TestPath: "import sys\n"} {
		if !strings.HasPrefix(path, filepath.Join(cache, pinnedDir, Sum([]byte(want)))+string(filepath.Separator)) {
			t.Errorf("%s is not pinned under the cache", path)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o444 {
			t.Errorf("pinned %s: %v, mode %v", path, err, st.Mode())
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "problem.py"), []byte("poisoned = True\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(task.ProblemPath); string(b) != goodProblem {
		t.Errorf("rewriting the kernel dir changed the pinned copy: %q", b)
	}
}

// TestRepin: a pinned copy changed, removed or swapped for a FIFO after Load
// is written again from what Load read.
func TestRepin(t *testing.T) {
	dir := makeDir(t, map[string]string{"problem.py": goodProblem, "input.py": goodKernel, "test.py": "import sys\n"})
	task, err := load(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	tamper := map[string]func(p string) error{
		"rewritten": func(p string) error {
			if err := os.Chmod(p, 0o644); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("poisoned = True\n"), 0o644)
		},
		"removed": os.Remove,
		"replaced by a folder": func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o755)
		},
	}
	for name, fn := range tamper {
		t.Run(name, func(t *testing.T) {
			for _, p := range []string{task.ProblemPath, task.TestPath} {
				if err := fn(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := task.Repin(); err != nil {
				t.Fatal(err)
			}
			for p, want := range map[string]string{task.ProblemPath: goodProblem, task.TestPath: "import sys\n"} {
				b, err := os.ReadFile(p)
				st, _ := os.Stat(p)
				if err != nil || string(b) != want || st.Mode().Perm() != 0o444 {
					t.Errorf("after Repin %s holds %q (%v, %v)", p, b, err, st.Mode())
				}
			}
		})
	}
	hand := &Task{ProblemPath: "/k/problem.py"}
	if err := hand.Repin(); err != nil || hand.ProblemPath != "/k/problem.py" {
		t.Errorf("Repin of a task built by hand: %v, %s", err, hand.ProblemPath)
	}
}
