package ncu

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// probeScript runs one call of kagent's own (a doubling of a small tensor)
// inside the profiled range: no candidate code, so that what it shows about
// ncu in a sandbox cannot be staged by a candidate.
const probeScript = `import sys
import torch
x = torch.ones(1 << 16, device=%s)
torch.cuda.synchronize() if x.is_cuda else None
torch.cuda.profiler.start()
y = x * 2
torch.cuda.synchronize() if x.is_cuda else None
torch.cuda.profiler.stop()
print("kagent: probe call done", float(y.sum()), file=sys.stderr)
`

// Probe profiles one call of a trusted program as r runs profiles (in its
// sandbox, where r has an Isolator) and returns nil when ncu reported a
// kernel time for it, else why not. python runs the program on device
// ("" = cuda) of gpu (Run.GPU); dir is a folder of the probe's own, which
// it may write.
func Probe(ctx context.Context, r *Runner, gpu, python, device, dir string) error {
	if device == "" {
		device = "cuda"
	}
	lit, err := pyString(device)
	if err != nil {
		return fmt.Errorf("ncu probe: device: %w", err)
	}
	script := filepath.Join(dir, "probe.py")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(probeScript, lit)), 0o644); err != nil {
		return fmt.Errorf("ncu probe: %w", err)
	}
	rep, err := r.Run(ctx, Run{GPU: gpu, Dir: dir, Command: Command{
		Metrics: []string{MetricTime}, Program: []string{python, script},
	}})
	if err != nil {
		return fmt.Errorf("ncu probe: %w", err)
	}
	for _, l := range rep.Launches {
		if l.Values[MetricTime] > 0 {
			return nil
		}
	}
	return fmt.Errorf("ncu probe: %w: no kernel time in ncu's report of the probe's call", ErrNoKernels)
}

// SandboxVerdictFile holds, in kagent's cache, what probes found about ncu
// in a platform's sandbox, by probe key (what the verdict depends on).
const SandboxVerdictFile = "ncu-sandbox.json"

// SandboxVerdict is what one probe found.
type SandboxVerdict struct {
	OK      bool   `json:"ok"`
	Reason  string `json:"reason,omitempty"`
	Checked string `json:"checked"` // RFC 3339, UTC
}

// ReadSandboxVerdicts reads cacheDir's verdicts (none where there is no
// readable file).
func ReadSandboxVerdicts(cacheDir string) map[string]SandboxVerdict {
	out := map[string]SandboxVerdict{}
	if data, err := os.ReadFile(filepath.Join(cacheDir, SandboxVerdictFile)); err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

// LatestSandboxVerdict is the most recently checked of cacheDir's
// verdicts; false where there is none.
func LatestSandboxVerdict(cacheDir string) (SandboxVerdict, bool) {
	var latest SandboxVerdict
	found := false
	for _, v := range ReadSandboxVerdicts(cacheDir) {
		if !found || v.Checked > latest.Checked {
			latest, found = v, true
		}
	}
	return latest, found
}
