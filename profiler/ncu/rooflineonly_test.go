package ncu

import (
	"encoding/json"
	"maps"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kagent-kernels/kagent/roofline"
)

// TestRooflineOnlyMetrics: the reduced set (profile_metrics: roofline) asks
// for no speed-of-light percentage and nothing for the LLM's diagnosis, and
// keeps every metric the roofline reads.
func TestRooflineOnlyMetrics(t *testing.T) {
	set := RooflineOnlyMetrics()
	for _, m := range append([]string{MetricTime, MetricDRAMRead, MetricDRAMWrite, metricTensorAct,
		fp32Add, fp32Mul, fp32FMA, fp16Add, fp16Mul, fp16FMA, fp64Add, fp64Mul, fp64FMA}, OptionalMetrics...) {
		if !slices.Contains(set, m) {
			t.Errorf("%s missing", m)
		}
	}
	for _, m := range []string{MetricComputeSOL, MetricMemorySOL, "launch__registers_per_thread", "lts__t_sector_hit_rate.pct"} {
		if slices.Contains(set, m) {
			t.Errorf("%s asked for", m)
		}
	}
	if len(set) >= len(DefaultMetrics()) {
		t.Errorf("%d metrics, default %d", len(set), len(DefaultMetrics()))
	}
}

// TestRooflineOnlyPlacesLikeFull: H200 recordings of the full set, cut to what
// ncu reports for the reduced one, give the same time, bytes, FLOPs and
// roofline class, with no warning about the percentages not asked for; the
// SOL percentages then come from the bytes and FLOPs against the GPU's peaks.
func TestRooflineOnlyPlacesLikeFull(t *testing.T) {
	h200, _ := roofline.Lookup("NVIDIA H200")
	set := RooflineOnlyMetrics()
	for _, tc := range []struct {
		file  string
		names []string
		class roofline.Class
	}{
		{"h200_triton_matmul_bf16_range.csv", []string{"matmul_kernel"}, roofline.ClassCompute},
		{"h200_triton_rmsnorm_two_kernels_range.csv", []string{"sumsq_kernel", "scale_kernel"}, ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			ls := parseFile(t, tc.file).Select(Filter{Names: tc.names})
			full, err := Aggregate(ls, DefaultMetrics())
			if err != nil {
				t.Fatal(err)
			}
			cut := make([]Launch, len(ls))
			for i, l := range ls {
				cut[i] = l
				cut[i].Values = maps.Clone(l.Values)
				maps.DeleteFunc(cut[i].Values, func(k string, _ float64) bool { return !slices.Contains(set, k) })
			}
			m, err := Aggregate(cut, set)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Warnings) > 0 {
				t.Errorf("warnings %q", m.Warnings)
			}
			if m.TimeMS != full.TimeMS || m.BytesRead != full.BytesRead || m.BytesWrite != full.BytesWrite ||
				m.FLOPs != full.FLOPs || m.DType != full.DType || math.Abs(m.TensorPipePct-full.TensorPipePct) > 1e-9 {
				t.Errorf("reduced %+v\nfull %+v", m, full)
			}
			if m.ComputeSOL != 0 || m.MemorySOL != 0 {
				t.Errorf("SOL %v/%v from metrics not asked for", m.ComputeSOL, m.MemorySOL)
			}
			r, rf := roofline.Analyze(m, h200, roofline.Config{}), roofline.Analyze(full, h200, roofline.Config{})
			want := tc.class
			if want == "" {
				want = rf.Class
			}
			if r.Class != want || r.Class != rf.Class || r.Unplaced != "" || r.FloorMS != rf.FloorMS {
				t.Errorf("reduced: class %s floor %v (%s); full: class %s floor %v", r.Class, r.FloorMS, r.Unplaced, rf.Class, rf.FloorMS)
			}
			if r.MemorySOL <= 0 {
				t.Errorf("no memory SOL from the bytes: %+v", r)
			}
		})
	}
}

// TestNCUCostSets: scripts/ncu_cost.py measures kagent's two metric sets
// from copies of its own; they must stay what kagent asks ncu for.
func TestNCUCostSets(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to read scripts/ncu_cost.py")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "ncu_cost.py"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("ncu_cost", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print(json.dumps({"roofline": m.METRICS["roofline"], "full": m.METRICS["full"]}))`, script).Output()
	if err != nil {
		t.Fatalf("read %s: %v", script, err)
	}
	var sets map[string][]string
	if err := json.Unmarshal(out, &sets); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"roofline": RooflineOnlyMetrics(), "full": DefaultMetrics()} {
		got := slices.Clone(sets[name])
		slices.Sort(got)
		want = slices.Clone(want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("ncu_cost.py's %s set differs from kagent's:\n got %v\nwant %v", name, got, want)
		}
	}
}
