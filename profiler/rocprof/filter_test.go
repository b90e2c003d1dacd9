package rocprof

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFilterMatch(t *testing.T) {
	names := Filter{Names: []string{"rmsnorm_stats", "rmsnorm_apply"}}
	rx := Filter{Regex: regexp.MustCompile(`^rmsnorm_`)}
	tests := []struct {
		kernel string
		f      Filter
		want   bool
	}{
		{"rmsnorm_stats", names, true},
		{"rmsnorm_apply_0d1d2de", names, true}, // older Triton signature suffix
		{"rmsnorm_apply.kd", names, true},      // code-object symbol
		{"rmsnorm_stats_v2", names, false},
		{"xrmsnorm_stats", names, false},
		{fillKernel, names, false},
		{"rmsnorm_stats", rx, true},
		{"rmsnorm_fill", rx, false}, // helper word
		{"axpy", rx, false},
		{"rmsnorm_stats", Filter{}, true},
		{"matmul_kernel", Filter{}, true},
		{fillKernel, Filter{}, false},
		{"__amd_rocclr_fillBufferAligned", Filter{}, false},
		{"__amd_rocclr_copyBuffer", Filter{}, false},
		{"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", Filter{}, false},
		{"void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)", Filter{}, false},
		{"at::native::elementwise_kernel_manual_unroll", Filter{}, false},
		{"copy_kernel", Filter{}, false},
		{"copy_kernel", Filter{Names: []string{"copy_kernel"}}, true}, // named explicitly
		{"rmsnorm_stats", Filter{Names: []string{"rmsnorm_stats"}, Regex: regexp.MustCompile("nope")}, false},
	}
	for _, tt := range tests {
		if got := tt.f.Match(tt.kernel); got != tt.want {
			t.Errorf("%v.Match(%q) = %v, want %v", tt.f, tt.kernel, got, tt.want)
		}
	}
}

func TestFilterIncludeRegex(t *testing.T) {
	tests := []struct {
		f    Filter
		want string
	}{
		{Filter{Names: []string{"a_kernel", "b"}}, "(a_kernel|b)"},
		{Filter{Regex: regexp.MustCompile("^mm")}, "^mm"},
		{Filter{}, ""},
	}
	for _, tt := range tests {
		if got := tt.f.IncludeRegex(); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestWindow(t *testing.T) {
	tests := []struct {
		w       Window
		n       int
		lo, hi  int
		wantErr error
	}{
		{Window{}, 6, 0, 6, nil},
		{Window{Last: 2}, 6, 4, 6, nil},
		{Window{Last: 6}, 6, 0, 6, nil},
		{Window{Last: 7}, 6, 0, 0, ErrNoKernels},
		{Window{Skip: 4}, 6, 4, 6, nil},
		{Window{Skip: 4, Count: 2}, 6, 4, 6, nil},
		{Window{Skip: 2, Count: 2}, 6, 2, 4, nil},
		{Window{Skip: 5, Count: 2}, 6, 0, 0, ErrNoKernels},
		{Window{Skip: 6}, 6, 0, 0, ErrNoKernels},
		{Window{}, 0, 0, 0, ErrNoKernels},
	}
	for _, tt := range tests {
		lo, hi, err := tt.w.bounds(tt.n)
		if !errors.Is(err, tt.wantErr) || lo != tt.lo || hi != tt.hi {
			t.Errorf("%+v.bounds(%d) = %d, %d, %v; want %d, %d, %v", tt.w, tt.n, lo, hi, err, tt.lo, tt.hi, tt.wantErr)
		}
	}
	for _, bad := range []Window{{Skip: -1}, {Count: -1}, {Last: -2}, {Last: 2, Skip: 1}, {Last: 2, Count: 2}} {
		if err := bad.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v.Validate() = %v, want ErrConfig", bad, err)
		}
	}
}

// TestSelectAndJoin selects the profiled call in every pass of the
// testdata program and joins the passes: dispatch ids differ between the
// passes (each starts with a different number of copies), the ordinals
// within the call do not.
func TestSelectAndJoin(t *testing.T) {
	trace, err := ParseKernelTrace(openTestdata(t, "kernel_trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	sq, err := ParseCounterCollection(openTestdata(t, "counter_collection_sq.csv"))
	if err != nil {
		t.Fatal(err)
	}
	f := Filter{Names: []string{"rmsnorm_stats", "rmsnorm_apply"}}
	tests := []struct {
		name     string
		w        Window
		wantIDs  []int64
		wantVALU float64
	}{
		{"last two", Window{Last: 2}, []int64{9, 10}, 5e6},
		{"skip the warm-up calls", Window{Skip: 4, Count: 2}, []int64{9, 10}, 5e6},
		{"the second warm-up call", Window{Skip: 2, Count: 2}, []int64{6, 7}, 15e6},
		{"everything", Window{}, []int64{3, 4, 6, 7, 9, 10}, 35e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, err := SelectDispatches(trace, f, tt.w)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, d := range call {
				ids = append(ids, d.DispatchID)
			}
			if diff := cmp.Diff(tt.wantIDs, ids); diff != "" {
				t.Errorf("trace dispatch ids (-want +got):\n%s", diff)
			}
			sel, err := SelectCounters(sq, f, tt.w)
			if err != nil {
				t.Fatal(err)
			}
			if sel[0].DispatchID == call[0].DispatchID {
				t.Errorf("the SQ pass should number its dispatches differently (got the trace's id %d)", sel[0].DispatchID)
			}
			sum, err := Join(call, sel)
			if err != nil {
				t.Fatal(err)
			}
			if sum["SQ_INSTS_VALU"] != tt.wantVALU {
				t.Errorf("SQ_INSTS_VALU = %v, want %v", sum["SQ_INSTS_VALU"], tt.wantVALU)
			}
		})
	}
}

func TestSelectErrors(t *testing.T) {
	trace, err := ParseKernelTrace(openTestdata(t, "kernel_trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = SelectDispatches(trace, Filter{Names: []string{"layernorm_fwd"}}, Window{Last: 1})
	if !errors.Is(err, ErrNoKernels) {
		t.Fatalf("err = %v, want ErrNoKernels", err)
	}
	// The message lists what was there, for the fallback reason.
	for _, s := range []string{"layernorm_fwd", `"rmsnorm_stats" x3`, `"__amd_rocclr_copyBuffer" x1`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not mention %s", err, s)
		}
	}
}

func TestJoinMismatch(t *testing.T) {
	call := []Dispatch{{Kernel: "a"}, {Kernel: "b"}}
	tests := []struct {
		name string
		pass []CounterDispatch
		msg  string
	}{
		{"fewer dispatches", []CounterDispatch{{Kernel: "a"}}, "2 dispatches in the trace, 1 here"},
		{"other kernel", []CounterDispatch{{Kernel: "a"}, {Kernel: "c"}}, `dispatch 2 of the call is "b" in the trace and "c" here`},
	}
	for _, tt := range tests {
		_, err := Join(call, tt.pass)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want ErrMismatch mentioning %q", tt.name, err, tt.msg)
		}
	}
}

func TestIsHelper(t *testing.T) {
	for _, k := range []string{fillKernel, "__amd_rocclr_fillBufferAligned", "ck_tile_gemm", "Cijk_Alik_Bljk_SB",
		"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>(...)", "FillKernel", "batched_copy"} {
		if !IsHelper(k) {
			t.Errorf("IsHelper(%q) = false", k)
		}
	}
	for _, k := range []string{"rmsnorm_stats", "_attn_fwd", "matmul_kernel", "fused_add_mul_0"} {
		if IsHelper(k) {
			t.Errorf("IsHelper(%q) = true", k)
		}
	}
}
