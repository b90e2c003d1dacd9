package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

// TestHalvingExampleOnCPU: halving on a mistuned rmsnorm (BLOCK 64 where
// 128 is faster on the cpu platform: fewer programs for the interpreter)
// screens two variants with half the timing, times the faster in full and
// promotes it on that full timing.
func TestHalvingExampleOnCPU(t *testing.T) {
	dir := tritonKernelDir(t, "rmsnorm")
	input := filepath.Join(dir, "input.py")
	src, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	mistuned := strings.Replace(string(src), "BLOCK = 1024", "BLOCK = 64", 1)
	if mistuned == string(src) {
		t.Fatal("examples/rmsnorm/input.py has no BLOCK = 1024")
	}
	if err := os.WriteFile(input, []byte(mistuned), 0o644); err != nil {
		t.Fatal(err)
	}
	// No held-out shapes and a small cpu size: the interpreter runs less.
	kcfg, err := os.ReadFile(filepath.Join(dir, "kagent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(kcfg), "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "shapes:") {
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") {
				i++
			}
			continue
		}
		kept = append(kept, strings.Replace(lines[i], "features: 64, dim1: 32, dim2: 32", "features: 16, dim1: 16, dim2: 16", 1))
	}
	small := strings.Join(kept, "\n")
	if !strings.Contains(small, "features: 16, dim1: 16, dim2: 16") || strings.Contains(small, "\nshapes:") {
		t.Fatalf("examples/rmsnorm/kagent.yaml changed: the test cannot shrink it\n%s", small)
	}
	if err := os.WriteFile(filepath.Join(dir, "kagent.yaml"), []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "halving2.yaml")
	cfg := "strategy: halving\nmax_rounds: 2\nnum_workers: 2\nstrategy_config:\n  max_variants: 2\n  eta: 2\n  max_no_improvement: 1\nbenchmark_warmup: 10\nbenchmark_repeat: 40\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfgPath, "--no-progress")
	if r.code != ExitOK {
		t.Fatalf("halving: exit %d, want %d\n%s\n%s", r.code, ExitOK, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`best r1c(\d+) `).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no round-1 variant became the best:\n%s\n%s", r.stdout, r.stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".kagent", "runs", "*", "round001", "cand"+m[1]))
	if len(runs) != 1 {
		t.Fatalf("artifacts of r1c%s: %v", m[1], runs)
	}
	screens, _ := filepath.Glob(filepath.Join(runs[0], "timing-screen-*.json"))
	if len(screens) != 1 {
		t.Errorf("r1c%s has %d screening timings, want 1 (rung 0)", m[1], len(screens))
	}
	b, err := os.ReadFile(filepath.Join(runs[0], "timing.json"))
	if err != nil {
		t.Fatalf("the promoted candidate has no full timing: %v", err)
	}
	var tm platform.Timing
	if err := json.Unmarshal(b, &tm); err != nil || tm.Screening() || tm.MedianMS <= 0 {
		t.Errorf("the promoted candidate's timing.json is %s (%v): want a full timing", b, err)
	}
}
