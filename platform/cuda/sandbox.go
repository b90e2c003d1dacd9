package cuda

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/profiler/ncu"
	"golang.org/x/sys/unix"
)

// Where ncu profiles run. A profile runs a verified candidate in ncu's
// wrapper process; in the runners' sandbox (worker.ProfileSandbox) that
// candidate cannot reach kagent, its workers or the run's files. Whether
// ncu can profile inside the sandbox depends on the driver's settings
// (counters reserved to admins need capabilities the sandbox drops) and on
// ncu itself, so under ncu_sandbox auto a probe profiles one call of
// kagent's own there first: no candidate code, so that no candidate can
// make kagent take its profiles out of the sandbox. The verdict is kept in
// the process and in kagent's cache, keyed by what it depends on (ncu's
// binary, the driver, the kernel, the interpreter), so a machine pays for
// the probe once.

// probeVersion changes when what the probe checks changes: older verdicts
// are then probed again.
const probeVersion = "1"

// probeTimeout bounds the probe (ncu's start, torch's import, one call).
const probeTimeout = 3 * time.Minute

// failureTTL is how long a failed probe's verdict is kept in the cache: a
// failure that came from the moment (a probe that ran out of time on a
// busy machine) is probed again the next day.
const failureTTL = 24 * time.Hour

var (
	verdictMu sync.Mutex
	verdicts  = map[string]ncu.SandboxVerdict{} // by probe key, this process's
	warned    = map[string]bool{}               // keys whose failure was logged
)

// probeNCU runs the probe; tests replace it.
var probeNCU = ncu.Probe

// ncuIsolation decides where s's profiles run: the isolator and the
// interpreter its command names. sandboxed is false outside the sandbox
// (ncu_sandbox off, runners not sandboxed, or under auto a probe that
// failed): there ncu and the program run as kagent's children with the
// runners' scrubbed environment.
func (p *Platform) ncuIsolation(s worker.ProfilerSetup, gpu string, env []string) (iso ncu.Isolator, python string, sandboxed bool, err error) {
	python = p.cfg.Python
	if python == "" {
		python = "python3"
	}
	outside := worker.ProfileOutside(worker.Options{Device: "cuda", Env: env}, s.HarnessDir)
	if p.ncuSandbox == ncu.SandboxOff {
		return outside, python, false, nil
	}
	var ro []string
	if bin, err := (&ncu.Runner{NCU: p.cfg.NCUPath}).Binary(); err == nil {
		ro = append(ro, ncu.InstallDirs(bin)...)
	}
	if s.Load.ProblemPath != "" {
		if abs, err := filepath.Abs(s.Load.ProblemPath); err == nil {
			ro = append(ro, filepath.Dir(abs))
		}
	}
	box, inside, err := worker.ProfileSandbox(worker.Options{Python: python, Device: "cuda", Env: env}, s.HarnessDir, ro)
	if err != nil {
		return nil, "", false, fmt.Errorf("ncu in the sandbox: %w", err)
	}
	if box == nil {
		if p.ncuSandbox == ncu.SandboxOn {
			return nil, "", false, fmt.Errorf("ncu in the sandbox: platform_kwargs.%s is on, but runners are not sandboxed here: "+
				"set KAGENT_SANDBOX=on (kagent doctor says whether this machine can), or %s auto or off", ncu.KwargSandbox, ncu.KwargSandbox)
		}
		return outside, python, false, nil
	}
	if p.ncuSandbox == ncu.SandboxOn {
		return box, inside, true, nil
	}
	runner := &ncu.Runner{NCU: p.cfg.NCUPath, Env: append([]string{"PYTHONUNBUFFERED=1"}, env...), Timeout: probeTimeout, Isolate: box}
	key, err := probeKey(runner, inside)
	if err != nil {
		return outside, python, false, nil // no ncu: every profile says so
	}
	v := sandboxVerdict(key, s.CacheDir, func() error {
		dir, err := os.MkdirTemp(p.cfg.WorkDir, "kagent-ncu-probe-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		return probeNCU(context.Background(), runner, gpu, inside, "", dir)
	})
	if v.OK {
		return box, inside, true, nil
	}
	verdictMu.Lock()
	first := !warned[key]
	warned[key] = true
	verdictMu.Unlock()
	if first {
		logger := s.Logger
		if logger == nil {
			logger = slog.New(slog.DiscardHandler)
		}
		logger.Warn("ncu cannot profile in the runners' sandbox: profiles run outside it, with kagent's view of files and processes "+
			"but a scrubbed environment (platform_kwargs.ncu_sandbox: on keeps them inside; a profile that fails there falls back "+
			"to the synthetic roofline)",
			"reason", v.Reason, "checked", v.Checked)
	}
	return outside, python, false, nil
}

// sandboxVerdict is the probe's verdict for key: this process's, else the
// cache's, else probe's (then remembered in both).
func sandboxVerdict(key, cacheDir string, probe func() error) ncu.SandboxVerdict {
	verdictMu.Lock()
	defer verdictMu.Unlock()
	if v, ok := verdicts[key]; ok {
		return v
	}
	path := ""
	cached := map[string]ncu.SandboxVerdict{}
	if cacheDir != "" {
		path = filepath.Join(cacheDir, ncu.SandboxVerdictFile)
		cached = ncu.ReadSandboxVerdicts(cacheDir)
	}
	v, ok := cached[key]
	if ok && !v.OK {
		checked, err := time.Parse(time.RFC3339, v.Checked)
		ok = err == nil && time.Since(checked) < failureTTL
	}
	if !ok {
		v = ncu.SandboxVerdict{OK: true, Checked: time.Now().UTC().Format(time.RFC3339)}
		if err := probe(); err != nil {
			v.OK, v.Reason = false, firstLine(err.Error())
		}
		if path != "" {
			cached[key] = v
			if data, err := json.MarshalIndent(cached, "", " "); err == nil {
				_ = atomicfile.Write(path, data, 0o644)
			}
		}
	}
	verdicts[key] = v
	return v
}

// probeKey names what the probe's verdict depends on: ncu's binary (path,
// size, time), the driver's version, the kernel's release, the
// interpreter.
func probeKey(r *ncu.Runner, python string) (string, error) {
	bin, err := r.Binary()
	if err != nil {
		return "", err
	}
	parts := []string{probeVersion, bin, python}
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		if fi, err := os.Stat(real); err == nil {
			parts = append(parts, real, fmt.Sprint(fi.Size()), fi.ModTime().UTC().String())
		}
	}
	if data, err := os.ReadFile("/proc/driver/nvidia/version"); err == nil {
		parts = append(parts, firstLine(string(data)))
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		parts = append(parts, unix.ByteSliceToString(u.Release[:]))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12]), nil
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}
