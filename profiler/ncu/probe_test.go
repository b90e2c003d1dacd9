package ncu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// probeRunner is a runner of the fake ncu in mode, whose program runs
// through aheadShim (a CPU torch has no CUDA profiler).
func probeRunner(t *testing.T, mode string) (*Runner, string) {
	t.Helper()
	_, py := repoHarness(t)
	dir := t.TempDir()
	shim := filepath.Join(dir, "shim")
	if err := os.Mkdir(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"shim.py": aheadShim, "python": "#!/bin/sh\nexec \"$SHIM_PYTHON\" \"$SHIM_PY\" \"$@\"\n"}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &Runner{NCU: fakeNCU(t), Timeout: aheadTimeout, Env: []string{
		"FAKE_NCU_MODE=" + mode, "FAKE_NCU_CSV=" + sample(t, "raw_disable_extra_suffixes_via_log_file.csv"),
		"SHIM_PYTHON=" + py, "SHIM_PY=" + filepath.Join(dir, "shim.py"), "SHIM_DIR=" + shim,
	}}, filepath.Join(dir, "python")
}

// The probe runs its own program under ncu, which must exit 0 and report
// a kernel time; ncu's own failures come back as they are.
func TestProbe(t *testing.T) {
	r, python := probeRunner(t, "exec")
	if err := Probe(context.Background(), r, "probe-ok", python, "cpu", t.TempDir()); err != nil {
		t.Fatalf("Probe = %v, want nil", err)
	}
	r, python = probeRunner(t, "perm")
	if err := Probe(context.Background(), r, "probe-perm", python, "cpu", t.TempDir()); !errors.Is(err, ErrPermission) {
		t.Errorf("Probe = %v, want ErrPermission", err)
	}
	// The probe's program fails (no such device): ncu exits with its status.
	r, python = probeRunner(t, "exec")
	if err := Probe(context.Background(), r, "probe-bad", python, "nodevice", t.TempDir()); !errors.Is(err, ErrExit) {
		t.Errorf("Probe = %v, want ErrExit", err)
	}
}

// A sandboxed run without a folder of its own is refused: the sandbox may
// write the run's folder, and the default one is shared.
func TestIsolatedRunNeedsItsFolder(t *testing.T) {
	called := false
	r := &Runner{NCU: fakeNCU(t), Isolate: func(context.Context, []string, []string, string) (*exec.Cmd, error) {
		called = true
		return nil, errors.New("unreachable")
	}}
	_, err := r.Run(context.Background(), Run{Command: Command{Metrics: []string{MetricTime}, Program: []string{"python3", "wrap.py"}}})
	if !errors.Is(err, ErrConfig) || called {
		t.Errorf("Run = %v (isolator called %v), want ErrConfig before any sandbox", err, called)
	}
}

// InstallDirs finds the Nsight Compute installation a CUDA toolkit's
// launcher looks for: nsight-compute* next to its bin folder, and the
// folder such an entry links to.
func TestInstallDirs(t *testing.T) {
	root := t.TempDir()
	cuda := filepath.Join(root, "cuda-13.0")
	real := filepath.Join(root, "opt", "nsight-compute", "2025.3.1")
	for _, d := range []string{filepath.Join(cuda, "bin"), real} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(cuda, "bin", "ncu")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(cuda, "nsight-compute-2025.3.1")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	got := InstallDirs(bin)
	if len(got) < 2 || got[0] != link || got[1] != real {
		t.Errorf("InstallDirs = %v, want %s and %s first", got, link, real)
	}
}
