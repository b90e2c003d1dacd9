package cuda

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/profiler/ncu"
)

// TestNCUIsolation: under auto the probe decides, once per machine (its
// verdict is kept in the process and in the cache); on isolates without a
// probe; off never isolates; a failed probe is logged once and profiles
// run outside.
func TestNCUIsolation(t *testing.T) {
	if mode, _ := worker.SandboxMode(); mode == worker.SandboxOff {
		t.Skip("KAGENT_SANDBOX=off")
	}
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	tool := filepath.Join(t.TempDir(), "ncu")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	probes, failWith := 0, error(nil)
	probeNCU = func(context.Context, *ncu.Runner, string, string, string, string) error {
		probes++
		return failWith
	}
	t.Cleanup(func() { probeNCU = ncu.Probe })
	reset := func() {
		verdictMu.Lock()
		clear(verdicts)
		clear(warned)
		verdictMu.Unlock()
	}
	cache := t.TempDir()
	var logs bytes.Buffer
	setup := worker.ProfilerSetup{HarnessDir: t.TempDir(), CacheDir: cache, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	isolated := func(where string) bool {
		t.Helper()
		p := &Platform{cfg: platform.Config{NCUPath: tool, Python: py, WorkDir: t.TempDir()}, ncuSandbox: where}
		iso, python, sandboxed, err := p.ncuIsolation(setup, "0", nil)
		if err != nil {
			t.Fatalf("ncuIsolation(%s): %v", where, err)
		}
		if iso == nil || python == "" {
			t.Fatalf("ncuIsolation(%s): isolator %v with interpreter %q: want both, in the sandbox or out", where, iso != nil, python)
		}
		return sandboxed
	}

	reset()
	if !isolated(ncu.SandboxAuto) || probes != 1 {
		t.Fatalf("auto, probe passes: isolated after %d probes, want 1", probes)
	}
	if !isolated(ncu.SandboxAuto) || probes != 1 {
		t.Fatalf("auto again: %d probes, want the process's verdict", probes)
	}
	reset() // a new process: the cache's verdict
	if !isolated(ncu.SandboxAuto) || probes != 1 {
		t.Fatalf("auto in a new process: %d probes, want the cache's verdict", probes)
	}
	if !isolated(ncu.SandboxOn) || isolated(ncu.SandboxOff) || probes != 1 {
		t.Fatalf("on and off: %d probes, want none", probes)
	}

	reset()
	if err := os.Remove(filepath.Join(cache, ncu.SandboxVerdictFile)); err != nil {
		t.Fatal(err)
	}
	failWith = errors.New("ncu: ERR_NVGPUCTRPERM\nmore")
	if isolated(ncu.SandboxAuto) || isolated(ncu.SandboxAuto) || probes != 2 {
		t.Fatalf("auto, probe fails: %d probes, want 2 and no isolation", probes)
	}
	if n := strings.Count(logs.String(), "ncu cannot profile in the runners' sandbox"); n != 1 || !strings.Contains(logs.String(), "ERR_NVGPUCTRPERM") {
		t.Errorf("logged %d warnings, want 1 with the reason:\n%s", n, logs.String())
	}
	if !isolated(ncu.SandboxOn) {
		t.Errorf("on after a failed probe: not isolated")
	}

	// A failure from the day before is probed again, in a new process.
	reset()
	data, err := os.ReadFile(filepath.Join(cache, ncu.SandboxVerdictFile))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-failureTTL - time.Hour).UTC().Format(time.RFC3339)
	data = regexp.MustCompile(`"checked": "[^"]*"`).ReplaceAll(data, []byte(`"checked": "`+old+`"`))
	if err := os.WriteFile(filepath.Join(cache, ncu.SandboxVerdictFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	failWith = nil
	if !isolated(ncu.SandboxAuto) || probes != 3 {
		t.Errorf("an old failure: %d probes, want 3 and isolation", probes)
	}
}
