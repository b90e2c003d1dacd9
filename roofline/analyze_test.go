package roofline

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func mustLookup(t *testing.T, name string) Specs {
	t.Helper()
	s, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAnalyze(t *testing.T) {
	h200 := mustLookup(t, "NVIDIA H200")
	mi350 := mustLookup(t, "AMD Instinct MI350X")
	tests := []struct {
		name     string
		m        Metrics
		s        Specs
		cfg      Config
		want     Result
		warnings []string // substrings, in order
	}{
		{
			name: "ncu memory-bound",
			m:    Metrics{Source: "ncu", ComputeSOL: 8.41, MemorySOL: 74.79},
			s:    h200,
			want: Result{Source: "ncu", ComputeSOL: 8.41, MemorySOL: 74.79, SOL: 74.79, Class: ClassMemory, Headroom: 25.21},
		},
		{
			name: "ncu at roofline",
			m:    Metrics{Source: "ncu", ComputeSOL: 10, MemorySOL: 96},
			s:    h200,
			want: Result{Source: "ncu", ComputeSOL: 10, MemorySOL: 96, SOL: 96, Class: ClassMemory, Headroom: 4, AtRoofline: true},
		},
		{
			name: "ncu compute-bound",
			m:    Metrics{Source: "ncu", ComputeSOL: 81, MemorySOL: 40},
			s:    h200,
			want: Result{Source: "ncu", ComputeSOL: 81, MemorySOL: 40, SOL: 81, Class: ClassCompute, Headroom: 19},
		},
		{
			name: "ncu under-utilised below 60%",
			m:    Metrics{Source: "ncu", ComputeSOL: 30, MemorySOL: 55},
			s:    h200,
			want: Result{Source: "ncu", ComputeSOL: 30, MemorySOL: 55, SOL: 55, Class: ClassLatency, Headroom: 45},
		},
		{
			name: "rocprof threshold 40% makes the same numbers memory-bound",
			m:    Metrics{Source: "rocprof", ComputeSOL: 30, MemorySOL: 55},
			s:    h200,
			want: Result{Source: "rocprof", ComputeSOL: 30, MemorySOL: 55, SOL: 55, Class: ClassMemory, Headroom: 45},
		},
		{
			name: "rocprof at roofline at 85%",
			m:    Metrics{Source: "rocprof", ComputeSOL: 10, MemorySOL: 86},
			s:    h200,
			want: Result{Source: "rocprof", ComputeSOL: 10, MemorySOL: 86, SOL: 86, Class: ClassMemory, Headroom: 14, AtRoofline: true},
		},
		{
			name: "configured thresholds",
			m:    Metrics{Source: "ncu", ComputeSOL: 8, MemorySOL: 74},
			s:    h200,
			cfg:  Config{AtRooflinePct: 70, UnderutilizedPct: 80},
			want: Result{Source: "ncu", ComputeSOL: 8, MemorySOL: 74, SOL: 74, Class: ClassLatency, Headroom: 26, AtRoofline: true},
		},
		{
			name: "tensor pipe in use",
			m:    Metrics{Source: "ncu", ComputeSOL: 80, MemorySOL: 20, TensorPipePct: 70},
			s:    h200,
			want: Result{Source: "ncu", ComputeSOL: 80, MemorySOL: 20, SOL: 80, Class: ClassCompute, Headroom: 20, TensorCores: true},
		},
		{
			// 128 MiB moved in 32 us: 4194 GB/s = 87.4% of 4800.
			name: "synthetic memory-bound at roofline",
			m:    Metrics{Source: "synthetic", TimeMS: 0.032, BytesRead: 64 << 20, BytesWrite: 64 << 20, DType: "fp32"},
			s:    h200,
			want: Result{Source: "synthetic", MemorySOL: 87.381, SOL: 87.381, Class: ClassMemory, Headroom: 12.619,
				AtRoofline: true, AchievedGBs: 4194.3, FloorMS: 0.027962, FloorFraction: 0.87381},
		},
		{
			// 2*8192^3 bf16 FLOPs in 1.4 ms: 785.4 TFLOP/s = 79.4% of 989.4.
			name: "synthetic bf16 matmul",
			m: Metrics{Source: "synthetic", TimeMS: 1.4, BytesRead: 2 * 8192 * 8192 * 2, BytesWrite: 8192 * 8192 * 2,
				FLOPs: 2 * 8192 * 8192 * 8192, DType: "bf16"},
			s: h200,
			want: Result{Source: "synthetic", ComputeSOL: 79.378, MemorySOL: 5.9918, SOL: 79.378, Class: ClassCompute,
				Headroom: 20.622, AchievedGBs: 287.61, AchievedTFLOPS: 785.36, FloorMS: 1.1113, FloorFraction: 0.79378},
		},
		{
			name: "config dtype overrides the metrics' dtype",
			m: Metrics{Source: "synthetic", TimeMS: 1.4, BytesRead: 2 * 8192 * 8192 * 2, BytesWrite: 8192 * 8192 * 2,
				FLOPs: 2 * 8192 * 8192 * 8192, DType: "fp32"},
			s:   h200,
			cfg: Config{DType: "torch.bfloat16"},
			want: Result{Source: "synthetic", ComputeSOL: 79.378, MemorySOL: 5.9918, SOL: 79.378, Class: ClassCompute,
				Headroom: 20.622, AchievedGBs: 287.61, AchievedTFLOPS: 785.36, FloorMS: 1.1113, FloorFraction: 0.79378},
		},
		{
			name: "synthetic small kernel is latency-bound",
			m:    Metrics{Source: "synthetic", TimeMS: 0.01, BytesRead: 1 << 20, BytesWrite: 1 << 20},
			s:    h200,
			want: Result{Source: "synthetic", MemorySOL: 4.369, SOL: 4.369, Class: ClassLatency, Headroom: 95.631,
				AchievedGBs: 209.72, FloorMS: 0.00043691, FloorFraction: 0.043691},
		},
		{
			name: "synthetic tf32 on a GPU without TF32 uses fp32",
			m:    Metrics{Source: "synthetic", TimeMS: 1, FLOPs: 100e9, DType: "tf32"},
			s:    mi350,
			want: Result{Source: "synthetic", ComputeSOL: 69.348, SOL: 69.348, Class: ClassCompute, Headroom: 30.652,
				AchievedTFLOPS: 100, FloorMS: 0.69348, FloorFraction: 0.69348},
			warnings: []string{"has no tf32 rate: compute SOL against its fp32 peak"},
		},
		{
			name: "synthetic above the bandwidth peak warns",
			m:    Metrics{Source: "synthetic", TimeMS: 0.001, BytesRead: 10e6},
			s:    h200,
			want: Result{Source: "synthetic", MemorySOL: 208.33, SOL: 208.33, Class: ClassMemory, AtRoofline: true,
				AchievedGBs: 10000, FloorMS: 0.0020833, FloorFraction: 2.0833},
			warnings: []string{"exceeds the 4800 GB/s peak"},
		},
		{
			name:     "unknown dtype",
			m:        Metrics{Source: "synthetic", TimeMS: 1, BytesRead: 4.8e9, FLOPs: 1e9, DType: "int4"},
			s:        h200,
			want:     Result{Source: "synthetic", MemorySOL: 100, SOL: 100, Class: ClassMemory, AtRoofline: true, AchievedGBs: 4800, AchievedTFLOPS: 1, FloorMS: 1, FloorFraction: 1},
			warnings: []string{`unknown dtype "int4"`},
		},
		{
			name:     "nothing measured",
			m:        Metrics{Source: "ncu"},
			s:        h200,
			want:     Result{Source: "ncu", Class: ClassUnknown, Unplaced: UnplacedNothingMeasured},
			warnings: []string{"nothing to place on the roofline"},
		},
		{
			// The cpu platform: a time and bytes, no peaks. No SOL, class
			// or headroom (not 0% SOL, latency, 100% headroom).
			name:     "no peak figures",
			m:        Metrics{Source: "synthetic", TimeMS: 158, BytesRead: 262144, BytesWrite: 262144, FLOPs: 1e6},
			s:        Specs{Name: "cpu"},
			want:     Result{Source: "synthetic", Class: ClassUnknown, Unplaced: UnplacedNoPeaks, AchievedGBs: 0.0033181, AchievedTFLOPS: 6.3291e-6},
			warnings: []string{"no peak bandwidth for cpu", "no fp32 peak for cpu"},
		},
		{
			name: "a peak rate without a peak bandwidth places by compute",
			m:    Metrics{Source: "synthetic", TimeMS: 1, BytesRead: 1e6, FLOPs: 10e9},
			s:    Specs{Name: "x", FP32TFLOPS: 20},
			want: Result{Source: "synthetic", ComputeSOL: 50, SOL: 50, Class: ClassCompute, Headroom: 50, AchievedGBs: 1,
				AchievedTFLOPS: 10, FloorMS: 0.5, FloorFraction: 0.5},
			warnings: []string{"no peak bandwidth for x"},
		},
	}
	opts := cmp.Options{
		cmpopts.EquateApprox(1e-4, 1e-9),
		cmpopts.IgnoreFields(Result{}, "Warnings"),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Analyze(tt.m, tt.s, tt.cfg)
			if d := cmp.Diff(tt.want, got, opts); d != "" {
				t.Errorf("Analyze (-want +got):\n%s", d)
			}
			if len(got.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d", got.Warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(got.Warnings[i], w) {
					t.Errorf("warning %q lacks %q", got.Warnings[i], w)
				}
			}
		})
	}
}

func TestAnalyzerMatchesAnalyze(t *testing.T) {
	m := Metrics{Source: "ncu", ComputeSOL: 30, MemorySOL: 55}
	s := mustLookup(t, "NVIDIA H200")
	a := Analyzer{Config: Config{UnderutilizedPct: 50}}
	if got := a.Analyze(m, s); got.Class != ClassMemory {
		t.Errorf("class %s, want memory under a 50%% threshold", got.Class)
	}
}

func TestFloor(t *testing.T) {
	h200 := mustLookup(t, "NVIDIA H200")
	a100 := mustLookup(t, "NVIDIA A100-SXM4-80GB")
	tests := []struct {
		name         string
		bytes, flops float64
		dtype        string
		s            Specs
		want         float64 // ms
	}{
		{"bytes only", 4.8e9, 0, "fp32", h200, 1},
		{"bytes bind", 4.8e9, 1e11, "bf16", h200, 1},
		{"bf16 flops bind", 1e6, 989.4e12, "bf16", h200, 1000},
		{"fp32 flops at the CUDA-core rate", 0, 67e9, "fp32", h200, 1},
		{"tf32 allowed uses the TF32 rate", 0, 494.7e9, "tf32", h200, 1},
		{"torch spelling", 0, 989.4e9, "torch.float16", h200, 1},
		{"fp8 on A100 falls back to bf16", 0, 312e9, "fp8", a100, 1},
		{"unknown dtype uses the highest peak", 0, 1978.9e9, "int8", h200, 1},
		{"nothing", 0, 0, "fp32", h200, 0},
		{"no bandwidth figure", 1e9, 0, "fp32", Specs{Name: "x"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Floor(tt.bytes, tt.flops, tt.dtype, tt.s)
			if math.Abs(got-tt.want) > 1e-9*math.Max(1, tt.want) {
				t.Errorf("Floor = %v ms, want %v", got, tt.want)
			}
		})
	}
}

func TestPeakTFLOPS(t *testing.T) {
	h200 := mustLookup(t, "NVIDIA H200")
	mi250 := mustLookup(t, "AMD Instinct MI250X")
	tests := []struct {
		s        Specs
		dtype    string
		want     float64
		wantUsed string
		wantErr  error
	}{
		{h200, "fp32", 67, "fp32", nil},
		{h200, "float32", 67, "fp32", nil},
		{h200, "tf32", 494.7, "tf32", nil},
		{h200, "bfloat16", 989.4, "bf16", nil},
		{h200, "torch.float8_e4m3fn", 1978.9, "fp8", nil},
		{mi250, "fp8", 191.5, "bf16", nil},
		{mi250, "tf32", 47.9, "fp32", nil},
		{h200, "float64", 0, "", ErrUnknownDType},
	}
	for _, tt := range tests {
		t.Run(tt.s.Name+"/"+tt.dtype, func(t *testing.T) {
			got, used, err := tt.s.PeakTFLOPS(tt.dtype)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want || used != tt.wantUsed {
				t.Errorf("= %v %q, want %v %q", got, used, tt.want, tt.wantUsed)
			}
		})
	}
}

func TestCheckPhysical(t *testing.T) {
	h200 := mustLookup(t, "NVIDIA H200")
	big := 4.8e9 // 1 ms at peak bandwidth, far larger than L2
	small := 48e6
	tests := []struct {
		name   string
		timeMS float64
		bytes  float64
		wantOK bool
	}{
		{"at the measured copy rate", 1.14, big, true},
		{"at the datasheet peak", 1.0, big, true},
		{"within the 0.9 safety margin", 0.91, big, true},
		{"impossibly fast", 0.5, big, false},
		{"small data may beat the floor by cache effects", 0.006, small, true},
		{"small data far too fast", 0.004, small, false},
		{"no time", 0, big, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPhysical(tt.timeMS, tt.bytes, 0, "fp32", h200)
			if (err == nil) != tt.wantOK {
				t.Fatalf("err = %v, want ok=%v", err, tt.wantOK)
			}
			if err != nil && !errors.Is(err, ErrPhysicallyImpossible) {
				t.Errorf("%v is not ErrPhysicallyImpossible", err)
			}
		})
	}
}

func TestPlaced(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want bool
	}{
		{Result{}, false},
		{Result{Class: ClassUnknown, Unplaced: UnplacedNoPeaks}, false},
		{Result{Class: ClassLatency, SOL: 4}, true},
		{Result{Class: ClassMemory, SOL: 90, Headroom: 10}, true},
	} {
		if got := tc.r.Placed(); got != tc.want {
			t.Errorf("%+v: Placed() = %v, want %v", tc.r, got, tc.want)
		}
	}
}
