package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/kagent-kernels/kagent/internal/sandbox"
	"github.com/kagent-kernels/kagent/platform"
)

// A hardware profile runs a verified candidate in a program the profiler
// starts (ncu's wrapper script): without a sandbox it would run with
// kagent's own view of files and processes, able to end the run (kill
// kagent or its workers, delete the run's record). ProfileSandbox puts the
// profiler and that program in the runners' sandbox instead.

// sandboxHome is the environment every sandboxed program gets last: its
// home, temporary files and compiler caches in its private /tmp, never in
// kagent's shared cache.
var sandboxHome = []string{"HOME=/tmp", "TMPDIR=/tmp", "TRITON_CACHE_DIR=/tmp/triton", "TORCHINDUCTOR_CACHE_DIR=/tmp/inductor"}

// ProfileSandbox returns how a profiler runs its tool and the profiled
// program in the runners' OS sandbox, and the interpreter its command must
// name (o.Python's own executable, not a launcher that finds it). The
// function is nil where runners are not sandboxed: KAGENT_SANDBOX=off, or
// auto on a machine that cannot sandbox. KAGENT_SANDBOX=on on such a
// machine is platform.ErrNoSandbox.
//
// The program sees what a runner sees (Python and harnessDir read-only, the
// GPU's device nodes, system folders, a private /tmp that is also its home
// and Triton's cache), readOnly (the problem's folder), and the tool's own
// installation (the folder of argv[0] and of the file it links to), all
// read-only; the profile's folder is the one host path it may write. It sees
// only its own processes and has no network.
func ProfileSandbox(o Options, harnessDir string, readOnly []string) (func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error), string, error) {
	mode, err := SandboxMode()
	if err != nil {
		return nil, "", err
	}
	if mode == SandboxOff {
		return nil, "", nil
	}
	if r := probeSandbox(); !r.Available {
		if mode == SandboxOn {
			return nil, "", fmt.Errorf("%w: %s", platform.ErrNoSandbox, r.Reason)
		}
		return nil, "", nil
	}
	base, python, err := runnerPolicy(o, harnessDir, nil)
	if err != nil {
		return nil, "", fmt.Errorf("profile sandbox: %w", err)
	}
	base.ExtraFiles = nil
	for _, p := range readOnly {
		if _, err := os.Stat(p); err == nil && !slices.Contains(base.ReadOnly, p) {
			base.ReadOnly = append(base.ReadOnly, p)
		}
	}
	isolate := func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
		if len(argv) == 0 {
			return nil, fmt.Errorf("profile sandbox: no program")
		}
		p := base
		p.ReadOnly = append(slices.Clone(base.ReadOnly), toolDirs(argv[0])...)
		p.ReadWrite = []string{dir}
		p.Dir = dir
		p.Env = lastWins(slices.Concat(base.Env, env, sandboxHome))
		return sandbox.CommandContext(ctx, p, argv)
	}
	return isolate, python, nil
}

// toolDirs are the folders a tool needs to run: its own, and that of the
// file it links to (ncu's launcher in a CUDA toolkit's bin links into the
// Nsight Compute installation, which holds the real binary and its
// sections).
func toolDirs(tool string) []string {
	dirs := []string{filepath.Dir(tool)}
	if real, err := filepath.EvalSymlinks(tool); err == nil {
		if d := filepath.Dir(real); d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// ProfileOutside returns how a profiler runs its tool and program where they
// are not sandboxed: as kagent's children, in the profile's folder, with the
// runners' scrubbed environment (o.Env added, HOME and TMPDIR the profile's
// folder), so that no API key or token in kagent's environment reaches the
// candidate.
func ProfileOutside(o Options, harnessDir string) func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
	return func(ctx context.Context, argv, env []string, dir string) (*exec.Cmd, error) {
		if len(argv) == 0 {
			return nil, fmt.Errorf("profile: no program")
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		base := scrubbedEnv(os.Environ(), dir, Options{HarnessDir: harnessDir, Device: o.Device, Env: o.Env})
		cmd.Env = lastWins(slices.Concat(base, env, []string{"HOME=" + dir, "TMPDIR=" + dir}))
		cmd.Dir = dir
		return cmd, nil
	}
}
