package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// clock is a deterministic clock: every reading is one millisecond after the
// last.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 29, 10, 0, 0, 123456789, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// openTest opens a store in a fresh temporary directory.
func openTest(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "history.db"), append([]Option{WithClock(newClock().Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func passVerdict() *platform.Verdict {
	return &platform.Verdict{
		Passed: true,
		Checks: []platform.Check{
			{Name: "static", Passed: true},
			{Name: "allclose", Passed: true},
			{Name: "shapes", Passed: true, Skipped: true, Reason: "no extra shapes"},
		},
		MaxAbsErr: 3.1e-6, RelL2: 1.2e-7, Launches: 2, TF32: "forbid", Duration: 1500 * time.Millisecond,
	}
}

func failVerdict(name, reason string) *platform.Verdict {
	return &platform.Verdict{
		Passed:   false,
		Checks:   []platform.Check{{Name: "static", Passed: true}, {Name: name, Passed: false, Reason: reason}},
		Failure:  name,
		Reason:   reason,
		Duration: 200 * time.Millisecond,
	}
}

func timingOf(id string, median float64) *platform.Timing {
	return &platform.Timing{
		Target: id, MedianMS: median, P20MS: median * 0.98, P80MS: median * 1.03, MeanMS: median * 1.01,
		CV: 0.012, N: 5, TimesMS: []float64{median * 0.98, median, median * 1.03, median, median * 1.01},
		Representative: true, Method: "cuda events, L2 flush 120 MiB, 3 input sets",
	}
}

func metricsOf(median float64) *roofline.Metrics {
	return &roofline.Metrics{
		Source: "ncu", TimeMS: median, BytesRead: 2.1e9, BytesWrite: 1.05e9, FLOPs: 4e8,
		ComputeSOL: 12.5, MemorySOL: 81.25, Kernels: []string{"rmsnorm_kernel"},
		Raw:      map[string]float64{"dram__throughput.avg.pct_of_peak_sustained_elapsed": 81.25, "sm__throughput": 12.5},
		DType:    "fp32",
		Warnings: []string{"launch cap reached"},
	}
}

func rooflineOf() *roofline.Result {
	return &roofline.Result{
		ComputeSOL: 12.5, MemorySOL: 81.25, SOL: 81.25, Class: roofline.ClassMemory, Headroom: 18.75,
		Source: "ncu", AchievedGBs: 3900, FloorMS: 3.56, FloorFraction: 0.8125,
	}
}

// kernelSource is a small Triton kernel whose text varies with tag.
func kernelSource(tag string) string {
	return fmt.Sprintf(`import torch
import triton
import triton.language as tl

# variant %s
@triton.jit
def kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * %q, mask=mask)
`, tag, tag)
}

// newRun creates a run and opens round 0 holding the input candidate.
func newRun(t *testing.T, s *Store, id string) Run {
	t.Helper()
	ctx := context.Background()
	r := must[Run](t)(s.CreateRun(ctx, Run{ID: id, KernelDir: "/k/rmsnorm", Problem: "rmsnorm", Strategy: "greedy"}))
	check(t, s.StartRound(ctx, id, 0))
	must[Candidate](t)(s.AddCandidate(ctx, Candidate{RunID: id, ID: r.InputID, Round: 0, Source: kernelSource("input")}))
	return r
}

func ids(cs []Candidate) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}
