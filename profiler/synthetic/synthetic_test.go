package synthetic

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/kagent-kernels/kagent/roofline"
)

func TestElementSize(t *testing.T) {
	tests := map[string]int{
		"float32": 4, "torch.float32": 4, "fp32": 4, "float16": 2, "torch.bfloat16": 2, "bf16": 2,
		"float64": 8, "int64": 8, "int32": 4, "int8": 1, "bool": 1, "torch.float8_e4m3fn": 1,
		"float8_e5m2": 1, "complex64": 8, "complex128": 16, " Half ": 2,
	}
	for d, want := range tests {
		got, err := ElementSize(d)
		if err != nil || got != want {
			t.Errorf("ElementSize(%q) = %d, %v; want %d", d, got, err, want)
		}
	}
	if _, err := ElementSize("quaternion"); !errors.Is(err, ErrUnknownDType) {
		t.Errorf("unknown dtype: %v", err)
	}
}

// rmsnorm is the KernelBench RMSNorm problem: x of 112x64x512x512, one output.
func rmsnorm(dtype string) Work {
	shape := []int64{112, 64, 512, 512}
	return Work{
		Inputs:  []Tensor{{Shape: shape, DType: dtype}},
		Outputs: []Tensor{{Shape: shape, DType: dtype}},
	}
}

func TestMetrics(t *testing.T) {
	const n = 112 * 64 * 512 * 512
	tests := []struct {
		name   string
		w      Work
		timeMS float64
		reason string
		want   roofline.Metrics
	}{
		{
			name: "rmsnorm fp32", w: rmsnorm("torch.float32"), timeMS: 5.39, reason: "ncu not permitted",
			want: roofline.Metrics{Source: "synthetic", TimeMS: 5.39, BytesRead: 4 * n, BytesWrite: 4 * n, DType: "fp32",
				Fallback: "ncu not permitted", Warnings: []string{"no FLOP count: compute SOL left out"}},
		},
		{
			name: "rmsnorm bf16", w: rmsnorm("bfloat16"), timeMS: 2.68,
			want: roofline.Metrics{Source: "synthetic", TimeMS: 2.68, BytesRead: 2 * n, BytesWrite: 2 * n, DType: "bf16",
				Warnings: []string{"no FLOP count: compute SOL left out"}},
		},
		{
			name: "matmul with flops; int index tensor does not pick the dtype",
			w: Work{
				Inputs: []Tensor{
					{Shape: []int64{4096, 4096}, DType: "float16"},
					{Shape: []int64{4096, 4096}, DType: "float16"},
					{Shape: []int64{4096, 4096}, DType: "int64"},
				},
				Outputs: []Tensor{{Shape: []int64{4096, 4096}, DType: "float16"}},
				FLOPs:   2 * 4096 * 4096 * 4096,
			},
			timeMS: 0.2,
			want: roofline.Metrics{Source: "synthetic", TimeMS: 0.2, BytesRead: 4096 * 4096 * (2 + 2 + 8),
				BytesWrite: 4096 * 4096 * 2, FLOPs: 2 * 4096 * 4096 * 4096, DType: "fp16"},
		},
		{
			name: "peak dtype override and a scalar",
			w: Work{
				Inputs:    []Tensor{{Shape: []int64{1024, 1024}, DType: "float32"}, {Shape: nil, DType: "float32"}},
				Outputs:   []Tensor{{Shape: []int64{1024, 1024}, DType: "float32"}},
				FLOPs:     1e9,
				PeakDType: "tf32",
			},
			timeMS: 1,
			want: roofline.Metrics{Source: "synthetic", TimeMS: 1, BytesRead: 1024*1024*4 + 4,
				BytesWrite: 1024 * 1024 * 4, FLOPs: 1e9, DType: "tf32"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Metrics(tt.w, tt.timeMS, tt.reason)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Metrics (-want +got):\n%s", d)
			}
		})
	}
}

func TestMetricsErrors(t *testing.T) {
	if _, err := Metrics(rmsnorm("float32"), 0, ""); !errors.Is(err, ErrNoTime) {
		t.Errorf("zero time: %v", err)
	}
	bad := Work{Inputs: []Tensor{{Shape: []int64{2, -1}, DType: "float32"}}}
	if _, err := Metrics(bad, 1, ""); !errors.Is(err, ErrBadShape) {
		t.Errorf("bad shape: %v", err)
	}
	odd := Work{Outputs: []Tensor{{Shape: []int64{2}, DType: "posit16"}}}
	if _, err := Metrics(odd, 1, ""); !errors.Is(err, ErrUnknownDType) {
		t.Errorf("unknown dtype: %v", err)
	}
}

// TestRMSNormOnH200 ties the counts to the H200 anchors of h200.md: the
// two-pass bf16 kernel (2.68 ms) against the 4800 GB/s datasheet floor.
func TestRMSNormOnH200(t *testing.T) {
	h200, err := roofline.Lookup("NVIDIA H200")
	if err != nil {
		t.Fatal(err)
	}
	w := rmsnorm("bfloat16")
	floor, err := w.Floor(h200)
	if err != nil {
		t.Fatal(err)
	}
	// 2 x 3.76 GB at 4800 GB/s = 1.566 ms.
	if math.Abs(floor-1.5657) > 1e-3 {
		t.Errorf("floor %.4f ms", floor)
	}
	m, _ := Metrics(w, 2.68, "")
	r := roofline.Analyze(m, h200, roofline.Config{})
	if r.Class != roofline.ClassMemory || r.MemorySOL < 55 || r.MemorySOL > 60 || r.AtRoofline {
		t.Errorf("two-pass rmsnorm: %+v", r)
	}
}
