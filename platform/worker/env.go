package worker

// What a worker process is given: an environment scrubbed down to an
// allowlist (no LLM keys or credentials) and a private directory with a
// temporary folder of its own, removed when the worker is closed.

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tmpDir is the folder of the work dir that is the worker's TMPDIR.
const tmpDir = "tmp"

// cleanup removes the worker's own directory (or, in a work dir it was
// given, its temporary folder). Call it only once the process has exited.
func (w *Worker) cleanup() {
	switch {
	case w.workDir == "":
	case w.ownDir:
		removeAll(w.workDir)
	default:
		removeAll(filepath.Join(w.workDir, tmpDir))
	}
}

// removeAll removes dir even where code run by the worker took away the
// write or search permission of folders inside it.
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() || err != nil {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// envAllow lists the variables (or prefixes, ending in _) a worker inherits.
// Everything else — LLM keys, cloud credentials, tokens — stays behind.
var envAllow = []string{
	"PATH", "LANG", "LC_", "TZ", "TMPDIR", "TERM",
	"LD_LIBRARY_PATH", "CUDA_", "NVIDIA_", "HIP_", "ROCR_", "ROCM_", "HSA_", "AMD_",
	"ZE_", "ONEAPI_", "SYCL_", "TRITON_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_",
	"OMP_NUM_THREADS", "MKL_NUM_THREADS", "CONDA_PREFIX", "VIRTUAL_ENV", "PYTHONHOME",
	// The device memory the worker plans with (PROTOCOL.md, Memory).
	"KAGENT_MEMORY_LIMIT",
	// Device buffers shared with the runners (devbuf.py), opt-in.
	"KAGENT_DEVICE_BUFFERS",
	// The judge's fused reductions of large tensors (fused.py): 0 turns them off.
	"KAGENT_FUSED",
	// Timing from the profiler's device records (kernel_clock.py), opt-in.
	"KAGENT_TIMING_CLOCK",
	// A round's knob variants compiled ahead (screen.py): 0 turns it off.
	"KAGENT_COMPILE_AHEAD",
	// The next candidate's runner started during a verification (spare.py):
	// 0 turns it off, 1 on (default: on for GPUs).
	"KAGENT_SPARE_RUNNER",
	// The share of the device below which a spare is lent its buffers ahead.
	"KAGENT_SPARE_LEND_SHARE",
	// Each op's and step's duration on stderr (scripts/verify_cost.py).
	"KAGENT_TRACE",
	// The compile baseline's objects frozen out of the judge's full
	// collections (longlived.py): 0 turns it off.
	"KAGENT_FREEZE_BASELINE",
}

// envDeny drops any variable whose name mentions a secret, even if allowed.
var envDeny = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "SESSION"}

// scrubbedEnv builds a worker's environment from the allowlist.
func scrubbedEnv(environ []string, workDir string, o Options) []string {
	var env []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !allowedEnv(name) {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+workDir,
		"PYTHONPATH="+o.HarnessDir,
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
		"KAGENT_DEVICE="+o.Device,
		"TMPDIR="+filepath.Join(workDir, tmpDir),
	)
	return append(env, o.Env...)
}

func allowedEnv(name string) bool {
	upper := strings.ToUpper(name)
	for _, d := range envDeny {
		if strings.Contains(upper, d) {
			return false
		}
	}
	for _, a := range envAllow {
		if name == a || strings.HasSuffix(a, "_") && strings.HasPrefix(name, a) {
			return true
		}
	}
	return false
}
