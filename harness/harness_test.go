package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// same reports whether dir holds exactly the embedded harness.
func same(t *testing.T, dir string) {
	t.Helper()
	var got []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got = append(got, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range Files() {
		want[n] = true
		b, _ := files.ReadFile(n)
		have, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil || !bytes.Equal(have, b) {
			t.Errorf("%s differs from the embedded file (%v)", n, err)
		}
	}
	for _, g := range got {
		if !want[g] && g != Package+"/.complete" {
			t.Errorf("%s should not be there", g)
		}
	}
}

// TestInstallRepairs: an installed copy that a candidate changed (a module
// rewritten, a module added beside the package, a compiled cache planted)
// is made equal to the embedded harness by the next Install.
func TestInstallRepairs(t *testing.T) {
	cache := t.TempDir()
	dir, err := Install(cache)
	if err != nil {
		t.Fatal(err)
	}
	same(t, dir)
	pkg := filepath.Join(dir, Package)
	tamper := map[string]string{
		filepath.Join(pkg, "numerics.py"):                             "DEFAULT_TOLERANCE = {}\n",
		filepath.Join(dir, "sitecustomize.py"):                        "import os\n",
		filepath.Join(pkg, "extra.py"):                                "x = 1\n",
		filepath.Join(pkg, "__pycache__", "numerics.cpython-312.pyc"): "not a pyc",
	}
	for p, src := range tamper {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(pkg, "timing.py")); err != nil {
		t.Fatal(err)
	}
	again, err := Install(cache)
	if err != nil || again != dir {
		t.Fatalf("Install again: %q %v", again, err)
	}
	same(t, dir)
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "h")
	got, err := Write(dir)
	if err != nil || got != dir {
		t.Fatalf("Write: %q %v", got, err)
	}
	same(t, dir)
	if _, err := Write(dir); err == nil {
		t.Error("Write into an existing directory succeeded")
	}
}
