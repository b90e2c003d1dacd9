package rocprof

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kagent-kernels/kagent/roofline"
)

// mi300x holds the specs' MI300X figures (roofline/specs.yaml).
var mi300x = roofline.Specs{
	Name: "AMD Instinct MI300X", Vendor: "amd", Arch: "CDNA3", Target: "gfx942", Units: 304, WarpSize: 64,
	FP32TFLOPS: 163.4, TF32TFLOPS: 653.7, FP16TFLOPS: 1307.4, BF16TFLOPS: 1307.4, FP8TFLOPS: 2614.9,
	MemBWGBs: 5300, MemGB: 192, L2MB: 32,
}

var approx = cmpopts.EquateApprox(1e-9, 1e-9)

// wantTestdataMetrics are the metrics of the testdata program's profiled
// call on an MI300X, worked out by hand:
//
//	time   = 400 us + 600 us = 1 ms
//	read   = (1048576 + 1048576) KB x 1024 = 2147483648 B
//	write  = (64 + 1048576) KB x 1024     = 1073807360 B
//	BW     = 3221291008 B / 1e6 ns = 3221.29 GB/s -> 60.78% of 5300 GB/s
//	VALU   = (2e6 + 3e6) x 64 lanes x 2 = 6.4e8 FLOPs (estimate)
//	peak   = 2100 MHz x 304 CUs x 128 = 81.7152 TFLOP/s -> 0.7832%
//	L2 hit = 800000 / (800000 + 1200000) = 40%
func wantTestdataMetrics() roofline.Metrics {
	return roofline.Metrics{
		Source: "rocprof", TimeMS: 1, BytesRead: 2147483648, BytesWrite: 1073807360, FLOPs: 6.4e8,
		ComputeSOL: 100 * 6.4e8 / 1e6 / 81715.2, MemorySOL: 100 * 3221.291008 / 5300,
		Kernels: []string{"rmsnorm_stats", "rmsnorm_apply"}, DType: "fp32",
		Raw: map[string]float64{
			"SQ_WAVES": 60000, "SQ_INSTS_VALU": 5e6, "SQ_INSTS_SALU": 250000, "SQ_INSTS_VMEM_RD": 100000,
			"SQ_INSTS_VMEM_WR": 50100, "SQ_INSTS_LDS": 0, "SQ_INSTS_VALU_MFMA_MOPS_F32": 0,
			"TCC_HIT_sum": 800000, "TCC_MISS_sum": 1200000, "TCC_EA0_RDREQ_sum": 16777216, "TCC_EA0_WRREQ_sum": 8389120,
			"FETCH_SIZE": 2097152, "WRITE_SIZE": 1048640,
			RawKernelTimeNS: 1e6, RawDispatches: 2, RawAchievedGBs: 3221.291008, RawVALUFLOPsEst: 6.4e8,
			RawMFMAFLOPs: 0, RawMFMASOL: 0, RawVALUSOL: 100 * 6.4e8 / 1e6 / 81715.2, RawVALUPeakTFLOPS: 81.7152,
			RawL2HitPct: 40,
		},
	}
}

// TestBuildMetricsFromTestdata runs the whole parse-select-join-build chain
// on the testdata CSVs, one file per pass in four different layouts.
func TestBuildMetricsFromTestdata(t *testing.T) {
	f := Filter{Names: []string{"rmsnorm_stats", "rmsnorm_apply"}}
	w := Window{Last: 2}
	trace, err := ParseKernelTrace(openTestdata(t, "kernel_trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	call, err := SelectDispatches(trace, f, w)
	if err != nil {
		t.Fatal(err)
	}
	counters := map[string]float64{}
	for _, file := range []string{"counter_collection_sq.csv", "counter_collection_tcc.csv",
		"counter_collection_fetch_v15.csv", "counter_collection_write_v16.csv"} {
		cs, err := ParseCounterCollection(openTestdata(t, file))
		if err != nil {
			t.Fatal(err)
		}
		sel, err := SelectCounters(cs, f, w)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Join(call, sel)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range sum {
			counters[k] = v
		}
	}
	agents, err := ParseAgentInfo(openTestdata(t, "agent_info.csv"))
	if err != nil {
		t.Fatal(err)
	}
	m := BuildMetrics(Call{Dispatches: call, Counters: counters, Agent: pickAgent(agents, "gfx942"), DType: "torch.float32"}, mi300x)
	if diff := cmp.Diff(wantTestdataMetrics(), m, approx); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}

	// On the roofline with rocprof's thresholds: memory-bound, not there yet.
	r := NewAnalyzer(roofline.Config{}).Analyze(m, mi300x)
	if r.Class != roofline.ClassMemory || r.AtRoofline || math.Abs(r.SOL-m.MemorySOL) > 1e-9 {
		t.Errorf("roofline %+v", r)
	}
	if math.Abs(r.AchievedGBs-3221.291008) > 1e-6 {
		t.Errorf("achieved %v GB/s", r.AchievedGBs)
	}
}

func TestBuildMetricsCases(t *testing.T) {
	call := []Dispatch{{Kernel: "mm", StartNS: 0, EndNS: 2_000_000}} // 2 ms
	agent := &Agent{Name: "gfx942", CUs: 304, WaveSize: 64, MaxClockMHz: 2100}
	tests := []struct {
		name     string
		counters map[string]float64
		agent    *Agent
		specs    roofline.Specs
		check    func(t *testing.T, m roofline.Metrics)
		warn     string
	}{
		{
			// 2 ms of bf16 MFMA at 1 PFLOP/s: 2e12 FLOPs = 3.90625e9 MOPS.
			name: "bf16 matmul: MFMA rate against the dense bf16 peak",
			counters: map[string]float64{"SQ_INSTS_VALU": 1e6, "SQ_INSTS_VALU_MFMA_MOPS_BF16": 2e12 / 512,
				"FETCH_SIZE": 1 << 20, "WRITE_SIZE": 1 << 19},
			agent: agent, specs: mi300x,
			check: func(t *testing.T, m roofline.Metrics) {
				wantMFMA := 100 * 1000 / 1307.4
				if math.Abs(m.ComputeSOL-wantMFMA) > 1e-9 || math.Abs(m.TensorPipePct-wantMFMA) > 1e-9 {
					t.Errorf("compute SOL %v, tensor %v; want %v", m.ComputeSOL, m.TensorPipePct, wantMFMA)
				}
				if want := 2e12 + 1e6*128; math.Abs(m.FLOPs-want) > 1 {
					t.Errorf("FLOPs %v, want %v", m.FLOPs, want)
				}
				if math.Abs(m.BytesRead-(1<<30)) > 0 || math.Abs(m.BytesWrite-(1<<29)) > 0 {
					t.Errorf("bytes %v %v", m.BytesRead, m.BytesWrite)
				}
			},
		},
		{
			name:     "VALU-bound: issue rate against the non-packed vector peak",
			counters: map[string]float64{"SQ_INSTS_VALU": 81.7152e12 * 2e-3 / 128 * 0.9, "FETCH_SIZE": 1, "WRITE_SIZE": 1},
			agent:    agent, specs: mi300x,
			check: func(t *testing.T, m roofline.Metrics) {
				if math.Abs(m.ComputeSOL-90) > 1e-9 || m.TensorPipePct != 0 {
					t.Errorf("compute SOL %v, tensor %v; want 90, 0", m.ComputeSOL, m.TensorPipePct)
				}
			},
		},
		{
			name:     "no agent_info: VALU peak from the specs, with a warning",
			counters: map[string]float64{"SQ_INSTS_VALU": 163.4e12 * 2e-3 / 128 / 2, "FETCH_SIZE": 1, "WRITE_SIZE": 1},
			specs:    mi300x,
			check: func(t *testing.T, m roofline.Metrics) {
				if math.Abs(m.ComputeSOL-50) > 1e-9 {
					t.Errorf("compute SOL %v, want 50", m.ComputeSOL)
				}
			},
			warn: "packed FP32",
		},
		{
			name:     "bandwidth above the peak is flagged",
			counters: map[string]float64{"SQ_INSTS_VALU": 1, "FETCH_SIZE": 6000e9 * 2e-3 / 1024, "WRITE_SIZE": 0},
			agent:    agent, specs: mi300x,
			check: func(t *testing.T, m roofline.Metrics) {
				if math.Abs(m.MemorySOL-100*6000.0/5300) > 1e-9 {
					t.Errorf("memory SOL %v", m.MemorySOL)
				}
			},
			warn: "Infinity Cache",
		},
		{
			name:     "zero FETCH_SIZE and WRITE_SIZE",
			counters: map[string]float64{"SQ_INSTS_VALU": 1, "FETCH_SIZE": 0, "WRITE_SIZE": 0},
			agent:    agent, specs: mi300x,
			check: func(t *testing.T, m roofline.Metrics) {
				if m.MemorySOL != 0 {
					t.Errorf("memory SOL %v", m.MemorySOL)
				}
			},
			warn: "gfx12",
		},
		{
			name:     "no bandwidth in the specs",
			counters: map[string]float64{"SQ_INSTS_VALU": 1, "FETCH_SIZE": 1, "WRITE_SIZE": 1},
			agent:    agent, specs: roofline.Specs{Name: "mystery"},
			check: func(t *testing.T, m roofline.Metrics) {},
			warn:  "no peak bandwidth for mystery",
		},
		{
			name:     "fp64 MFMA has no peak in the specs",
			counters: map[string]float64{"SQ_INSTS_VALU": 1, "SQ_INSTS_VALU_MFMA_MOPS_F64": 100, "FETCH_SIZE": 1, "WRITE_SIZE": 1},
			agent:    agent, specs: mi300x,
			check: func(t *testing.T, m roofline.Metrics) {
				if m.Raw[RawMFMAFLOPs] != 51200 {
					t.Errorf("MFMA FLOPs %v", m.Raw[RawMFMAFLOPs])
				}
			},
			warn: "no F64 matrix peak",
		},
		{
			name:     "counters missing",
			counters: map[string]float64{},
			agent:    agent, specs: mi300x,
			check: func(t *testing.T, m roofline.Metrics) {
				if m.ComputeSOL != 0 || m.MemorySOL != 0 {
					t.Errorf("SOL %v %v", m.ComputeSOL, m.MemorySOL)
				}
			},
			warn: "SQ_INSTS_VALU was not collected",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := BuildMetrics(Call{Dispatches: call, Counters: tt.counters, Agent: tt.agent}, tt.specs)
			if m.Source != Source || m.TimeMS != 2 {
				t.Errorf("source %q time %v", m.Source, m.TimeMS)
			}
			tt.check(t, m)
			joined := strings.Join(m.Warnings, "\n")
			if tt.warn == "" && joined != "" {
				t.Errorf("unexpected warnings: %s", joined)
			}
			if !strings.Contains(joined, tt.warn) {
				t.Errorf("warnings %q do not mention %q", joined, tt.warn)
			}
		})
	}
}

// TestAnalyzerThreshold: rocprof metrics are at the roofline from 85%,
// the ncu threshold (95%) does not apply.
func TestAnalyzerThreshold(t *testing.T) {
	tests := []struct {
		source string
		sol    float64
		want   bool
	}{
		{"rocprof", 84.9, false},
		{"rocprof", 85, true},
		{"rocprof", 90, true},
		{"synthetic", 86, true}, // a fallback keeps the counter thresholds
	}
	for _, tt := range tests {
		m := roofline.Metrics{Source: tt.source, MemorySOL: tt.sol, ComputeSOL: 1, TimeMS: 1}
		a := NewAnalyzer(roofline.Config{})
		if got := a.Analyze(m, mi300x); got.AtRoofline != tt.want || got.Class != roofline.ClassMemory {
			t.Errorf("%s at %v%%: at roofline %v class %s, want %v memory", tt.source, tt.sol, got.AtRoofline, got.Class, tt.want)
		}
	}
	if c := NewAnalyzer(roofline.Config{}).Config; c.AtRooflinePct != 85 || c.UnderutilizedPct != 40 {
		t.Errorf("rocprof defaults %+v", c)
	}
	if c := NewAnalyzer(roofline.Config{AtRooflinePct: 80}).Config; c.AtRooflinePct != 80 {
		t.Errorf("override lost: %+v", c)
	}
}

func TestDefaultPasses(t *testing.T) {
	tests := []struct {
		target, dtype string
		sq            string // the last SQ counter
		tcc           []string
	}{
		{"gfx942", "bf16", "SQ_INSTS_VALU_MFMA_MOPS_BF16", []string{"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum"}},
		{"gfx942:sramecc+:xnack-", "tf32", "SQ_INSTS_VALU_MFMA_MOPS_XF32", []string{"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum"}},
		{"gfx950", "tf32", "SQ_INSTS_VALU_MFMA_MOPS_F32", []string{"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum"}},
		{"gfx950", "torch.float8_e4m3fn", "SQ_INSTS_VALU_MFMA_MOPS_F8", []string{"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum"}},
		{"gfx90a", "fp16", "SQ_INSTS_VALU_MFMA_MOPS_F16", []string{"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_sum"}},
		{"gfx90a", "fp8", "SQ_INSTS_LDS", []string{"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_sum"}},
		{"gfx1151", "fp32", "SQ_INSTS_LDS", []string{"TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_sum"}},
	}
	for _, tt := range tests {
		ps := DefaultPasses(tt.target, tt.dtype)
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		if diff := cmp.Diff([]string{"SQ", "TCC", "FETCH_SIZE", "WRITE_SIZE"}, names); diff != "" {
			t.Errorf("%s: pass names (-want +got):\n%s", tt.target, diff)
		}
		sq := ps[0].Counters
		if sq[len(sq)-1] != tt.sq || len(sq) > 7 {
			t.Errorf("%s %s: SQ pass %v, want it to end with %s", tt.target, tt.dtype, sq, tt.sq)
		}
		if diff := cmp.Diff(tt.tcc, ps[1].Counters); diff != "" {
			t.Errorf("%s: TCC pass (-want +got):\n%s", tt.target, diff)
		}
		if diff := cmp.Diff([]string{"FETCH_SIZE"}, ps[2].Counters); diff != "" {
			t.Errorf("FETCH_SIZE must be alone: %s", diff)
		}
		if diff := cmp.Diff([]string{"WRITE_SIZE"}, ps[3].Counters); diff != "" {
			t.Errorf("WRITE_SIZE must be alone: %s", diff)
		}
	}
}

func TestPassArgs(t *testing.T) {
	prog := Wrapper{Script: "/w/wrapper.py", Args: []string{"--seed", "1"}}.Program()
	tests := []struct {
		p     Pass
		regex string
		want  []string
	}{
		{Pass{Name: TracePassName}, "(a|b)", []string{"--kernel-trace", "--kernel-include-regex", "(a|b)",
			"-d", "/o", "-o", "kagent", "--output-format", "csv", "--", "python3", "/w/wrapper.py", "--seed", "1"}},
		{Pass{Name: "SQ", Counters: []string{"SQ_WAVES", "SQ_INSTS_VALU"}}, "", []string{"--pmc", "SQ_WAVES", "SQ_INSTS_VALU",
			"-d", "/o", "-o", "kagent", "--output-format", "csv", "--", "python3", "/w/wrapper.py", "--seed", "1"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.p.Args("/o", tt.regex, prog)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.p.Name, diff)
		}
	}
}
