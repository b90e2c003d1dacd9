package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/internal/sandbox"
	ncuprof "github.com/kagent-kernels/kagent/profiler/ncu"
)

func TestSandboxRow(t *testing.T) {
	for _, tc := range []struct {
		report         sandbox.Report
		status, detail string
	}{
		{sandbox.Report{Available: true, UserNS: true, PIDNS: true, MountNS: true, NetNS: true, IPCNS: true, Seccomp: true, LandlockABI: 6},
			"ok", "namespaces user, pid, mount, net, ipc; seccomp; landlock ABI 6"},
		{sandbox.Report{Available: true, UserNS: true, PIDNS: true, MountNS: true, NetNS: true, IPCNS: true, Seccomp: true},
			"ok", "no landlock"},
		{sandbox.Report{Reason: "user namespaces are disabled (sysctl user.max_user_namespaces=0)"},
			"unavailable", "max_user_namespaces=0); candidates can run only unsandboxed, by explicit opt-in"},
	} {
		name, status, detail := sandboxRow(tc.report)
		if name != "sandbox" || status != tc.status || !strings.Contains(detail, tc.detail) {
			t.Errorf("%+v: %q %q %q", tc.report, name, status, detail)
		}
	}
}

// TestDoctorSandbox: the real binary has a sandbox row (the binary is its
// own sandbox init, so "ok" also checks main's hook).
func TestDoctorSandbox(t *testing.T) {
	r := run(t, t.TempDir(), "doctor")
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "sandbox" {
			continue
		}
		t.Log(line)
		if f[1] != "ok" && !(f[1] == "unavailable" && strings.HasSuffix(line, "by explicit opt-in")) {
			t.Errorf("sandbox row: %q", line)
		}
		return
	}
	t.Errorf("doctor has no sandbox row:\n%s", r.stdout)
}

// TestNCUSandboxRow: the row shows the latest probe in the cache, its
// reason made safe for a terminal.
func TestNCUSandboxRow(t *testing.T) {
	cache := t.TempDir()
	if _, status, _ := ncuSandboxRow(cache); status != "unknown" {
		t.Errorf("no probe: status %q, want unknown", status)
	}
	file := `{"a": {"ok": true, "checked": "2026-12-01T10:00:00Z"},
 "b": {"ok": false, "reason": "ncu probe: ERR_NVGPUCTRPERM \u001b[31mred", "checked": "2026-12-05T10:00:00Z"}}`
	if err := os.WriteFile(filepath.Join(cache, ncuprof.SandboxVerdictFile), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	name, status, detail := ncuSandboxRow(cache)
	if name != "ncu sandbox" || status != "outside" || !strings.Contains(detail, "ERR_NVGPUCTRPERM") ||
		!strings.Contains(detail, "2026-12-05T10:00:00Z") || strings.ContainsRune(detail, 0x1b) {
		t.Errorf("latest failed probe: %q %q %q", name, status, detail)
	}
}
