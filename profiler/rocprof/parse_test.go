package rocprof

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The CSV files under testdata/csv follow reference/profilers.md b.4-b.5:
// one program (an input copy, then two warm-up calls and one profiled
// call, each a PyTorch fill kernel plus the Triton kernels rmsnorm_stats
// and rmsnorm_apply), traced and counted in the layouts rocprofv3 has
// written over time. testdata/README.md describes them.

const fillKernel = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, " +
	"std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"

func openTestdata(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "csv", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseKernelTrace(t *testing.T) {
	wantNames := []string{"__amd_rocclr_copyBuffer",
		fillKernel, "rmsnorm_stats", "rmsnorm_apply",
		fillKernel, "rmsnorm_stats", "rmsnorm_apply",
		fillKernel, "rmsnorm_stats", "rmsnorm_apply"}
	tests := []struct {
		file      string
		wantAgent string
	}{
		{"kernel_trace.csv", "Agent 4"},  // current SDK, 22 columns, rows out of order
		{"kernel_trace_rocm63.csv", "4"}, // ROCm 6.2/6.3, 18 columns, bare agent number
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ds, err := ParseKernelTrace(openTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for i, d := range ds {
				names = append(names, d.Kernel)
				if d.DispatchID != int64(i+1) {
					t.Errorf("dispatch %d has id %d: not in Dispatch_Id order", i, d.DispatchID)
				}
				if d.Agent != tt.wantAgent {
					t.Errorf("dispatch %d agent %q, want %q", i, d.Agent, tt.wantAgent)
				}
			}
			if diff := cmp.Diff(wantNames, names); diff != "" {
				t.Errorf("kernel names (-want +got):\n%s", diff)
			}
			// The profiled call's kernels: 400 us and 600 us.
			if got := ds[8].DurationNS(); got != 400_000 {
				t.Errorf("rmsnorm_stats of the profiled call: %d ns, want 400000", got)
			}
			if got := ds[9].DurationNS(); got != 600_000 {
				t.Errorf("rmsnorm_apply of the profiled call: %d ns, want 600000", got)
			}
			if ds[9].StartNS != 1551874067889694 {
				t.Errorf("start %d", ds[9].StartNS)
			}
		})
	}
}

func TestParseCounterCollection(t *testing.T) {
	tests := []struct {
		file       string
		dispatches int
		firstID    int64
		counters   []string
		// want is the profiled call's rmsnorm_apply (the last dispatch).
		want map[string]float64
	}{
		{
			file: "counter_collection_sq.csv", dispatches: 12, firstID: 1,
			counters: []string{"SQ_WAVES", "SQ_INSTS_VALU", "SQ_INSTS_SALU", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR", "SQ_INSTS_LDS", "SQ_INSTS_VALU_MFMA_MOPS_F32"},
			want: map[string]float64{"SQ_WAVES": 30000, "SQ_INSTS_VALU": 3e6, "SQ_INSTS_SALU": 150000,
				"SQ_INSTS_VMEM_RD": 50000, "SQ_INSTS_VMEM_WR": 50000, "SQ_INSTS_LDS": 0, "SQ_INSTS_VALU_MFMA_MOPS_F32": 0},
		},
		{
			file: "counter_collection_tcc.csv", dispatches: 11, firstID: 1,
			want: map[string]float64{"TCC_HIT_sum": 200000, "TCC_MISS_sum": 800000,
				"TCC_EA0_RDREQ_sum": 8388608, "TCC_EA0_WRREQ_sum": 8388608},
		},
		{
			file: "counter_collection_fetch_v15.csv", dispatches: 13, firstID: 1, // no Kernel_Id, integer values
			want: map[string]float64{"FETCH_SIZE": 1048576},
		},
		{
			file: "counter_collection_write_v16.csv", dispatches: 14, firstID: 1, // no Accum_VGPR_Count, no timestamps
			want: map[string]float64{"WRITE_SIZE": 1048576},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			cs, err := ParseCounterCollection(openTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != tt.dispatches {
				t.Fatalf("%d dispatches, want %d", len(cs), tt.dispatches)
			}
			if cs[0].DispatchID != tt.firstID || cs[0].Kernel != "__amd_rocclr_copyBuffer" {
				t.Errorf("first dispatch %d %q", cs[0].DispatchID, cs[0].Kernel)
			}
			last := cs[len(cs)-1]
			if last.Kernel != "rmsnorm_apply" {
				t.Errorf("last kernel %q", last.Kernel)
			}
			if diff := cmp.Diff(tt.want, last.Counters); diff != "" {
				t.Errorf("counters of the last dispatch (-want +got):\n%s", diff)
			}
			for i := 1; i < len(cs); i++ {
				if cs[i].DispatchID <= cs[i-1].DispatchID {
					t.Errorf("dispatch %d out of order", cs[i].DispatchID)
				}
			}
			// The fill kernel's name holds commas inside quotes.
			if cs[len(cs)-3].Kernel != fillKernel {
				t.Errorf("fill kernel name %q", cs[len(cs)-3].Kernel)
			}
		})
	}
}

func TestParseCounterCollectionQuotingAndRepeats(t *testing.T) {
	// A name with doubled quotes and a comma, values printed as floats, and
	// one counter reported twice for a dispatch (summed).
	in := `"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"
7,7,"Agent 4",1,99,99,64,2,"k<""a"", b>",64,0,0,8,0,16,"SQ_WAVES",16384.000000,10,20
7,7,"Agent 4",1,99,99,64,2,"k<""a"", b>",64,0,0,8,0,16,"SQ_WAVES",16.500000,10,20
3,3,"Agent 4",1,99,99,64,1,"first",64,0,0,8,0,16,"SQ_WAVES",1,1,2
`
	cs, err := ParseCounterCollection(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []CounterDispatch{
		{DispatchID: 3, Kernel: "first", Counters: map[string]float64{"SQ_WAVES": 1}},
		{DispatchID: 7, Kernel: `k<"a", b>`, Counters: map[string]float64{"SQ_WAVES": 16400.5}},
	}
	if diff := cmp.Diff(want, cs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	traceHead := "Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Correlation_Id,Start_Timestamp,End_Timestamp\n"
	counterHead := "Correlation_Id,Dispatch_Id,Kernel_Name,Counter_Name,Counter_Value\n"
	tests := []struct {
		name    string
		trace   bool
		in      string
		wantErr error
		wantMsg string
	}{
		{"empty trace file", true, "", ErrNoOutput, "empty"},
		{"trace missing End_Timestamp", true, "Kind,Dispatch_Id,Kernel_Name,Start_Timestamp\n", ErrParse, "End_Timestamp"},
		{"trace bad timestamp", true, traceHead + `KERNEL_DISPATCH,"Agent 4",1,1,1,1,1,k,1,12x,20` + "\n", ErrParse, "Start_Timestamp"},
		{"trace ends before start", true, traceHead + `KERNEL_DISPATCH,"Agent 4",1,1,1,4,1,k,1,30,20` + "\n", ErrParse, "ends before"},
		{"trace short row", true, traceHead + `KERNEL_DISPATCH,"Agent 4",1` + "\n", ErrParse, "line 2"},
		{"trace unterminated quote", true, traceHead + `KERNEL_DISPATCH,"Agent 4,1,1,1,1,1,k,1,1,2` + "\n", ErrParse, ""},
		{"empty counter file", false, "", ErrNoOutput, "empty"},
		{"counter missing Counter_Value", false, "Dispatch_Id,Kernel_Name,Counter_Name\n", ErrParse, "Counter_Value"},
		{"counter bad value", false, counterHead + "1,1,k,SQ_WAVES,nan\n", ErrParse, "not a number"},
		{"counter kernel changes within a dispatch", false, counterHead + "1,1,k,A,1\n1,1,j,B,1\n", ErrParse, "dispatch 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.trace {
				_, err = ParseKernelTrace(strings.NewReader(tt.in))
			} else {
				_, err = ParseCounterCollection(strings.NewReader(tt.in))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err %q does not mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestParseTraceSkipsOtherKinds(t *testing.T) {
	in := "Kind,Dispatch_Id,Kernel_Name,Start_Timestamp,End_Timestamp\n" +
		"KERNEL_DISPATCH,2,b,30,40\n" +
		"MEMORY_COPY,3,,40,50\n" +
		"KERNEL_DISPATCH,1,a,10,20\n"
	ds, err := ParseKernelTrace(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Dispatch{{DispatchID: 1, Kernel: "a", StartNS: 10, EndNS: 20}, {DispatchID: 2, Kernel: "b", StartNS: 30, EndNS: 40}}
	if diff := cmp.Diff(want, ds); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseAgentInfo(t *testing.T) {
	as, err := ParseAgentInfo(openTestdata(t, "agent_info.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Agent{{Name: "gfx942", ProductName: "AMD Instinct MI300X", CUs: 304, SIMDsPerCU: 4, WaveSize: 64, MaxClockMHz: 2100, XCCs: 8}}
	if diff := cmp.Diff(want, as); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
