package rocprof

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTestdata writes testdata/csv/name to dir/rel.
func copyTestdata(t *testing.T, name, dir, rel string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "csv", name))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCollectLayouts: the files may sit directly in -d DIR or below a host
// and pid directory (reference/profilers.md b.3); files without rows (a
// child process that dispatched nothing) are ignored, two with rows are
// an error.
func TestCollectLayouts(t *testing.T) {
	trace := Pass{Name: TracePassName}
	fetch := Pass{Name: "FETCH_SIZE", Counters: []string{"FETCH_SIZE"}}
	header := "Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Correlation_Id,Start_Timestamp,End_Timestamp\n"
	tests := []struct {
		name    string
		pass    Pass
		files   map[string]string // rel path -> testdata file, or "!" + literal content
		wantN   int
		agents  int
		wantErr error
		wantMsg string
	}{
		{name: "with -o", pass: trace, files: map[string]string{"kagent_kernel_trace.csv": "kernel_trace.csv",
			"kagent_agent_info.csv": "agent_info.csv"}, wantN: 10, agents: 1},
		{name: "host/pid layout", pass: trace, files: map[string]string{"gpu-node-7/31337_kernel_trace.csv": "kernel_trace.csv",
			"gpu-node-7/31337_agent_info.csv": "agent_info.csv"}, wantN: 10, agents: 1},
		{name: "pass_N layout of a counter pass", pass: fetch, files: map[string]string{
			"pass_1/312_counter_collection.csv": "counter_collection_fetch_v15.csv"}, wantN: 13},
		{name: "an idle child process", pass: trace, files: map[string]string{
			"h/100_kernel_trace.csv": "kernel_trace.csv", "h/101_kernel_trace.csv": "!" + header}, wantN: 10},
		{name: "two processes with dispatches", pass: trace, files: map[string]string{
			"h/100_kernel_trace.csv": "kernel_trace.csv", "h/101_kernel_trace.csv": "kernel_trace_rocm63.csv"},
			wantErr: ErrParse, wantMsg: "several processes"},
		{name: "only a rocpd database", pass: trace, files: map[string]string{"kagent_results.db": "!SQLite format 3"},
			wantErr: ErrNoOutput, wantMsg: "no *_kernel_trace.csv under"},
		{name: "the stats file is not the counters", pass: fetch, files: map[string]string{
			"kagent_counter_collection_stats.csv": "!Name,Calls\n"}, wantErr: ErrNoOutput, wantMsg: "kagent_counter_collection_stats.csv"},
		{name: "a broken file", pass: trace, files: map[string]string{"kagent_kernel_trace.csv": "!Kind,Dispatch_Id\nx,1\n"},
			wantErr: ErrParse, wantMsg: "Kernel_Name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, src := range tt.files {
				if lit, ok := strings.CutPrefix(src, "!"); ok {
					if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, rel), []byte(lit), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				copyTestdata(t, src, dir, rel)
			}
			out, err := collect(tt.pass, dir, "")
			if tt.wantErr != nil {
				var pe *PassError
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("err = %v, want a *PassError wrapping %v mentioning %q", err, tt.wantErr, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := len(out.Dispatches) + len(out.Counters)
			if n != tt.wantN || len(out.Agents) != tt.agents {
				t.Errorf("%d dispatches, %d agents; want %d, %d", n, len(out.Agents), tt.wantN, tt.agents)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name, output string
		want         error
		detail       string
	}{
		{"error 38", "noise\nE1129 tool.cpp:1032] Could not construct profile cfg failed with error code 38: Request exceeds the capabilities of the hardware to collect\n",
			ErrExceedsHWLimit, "error code 38"},
		{"error 37 of the 2024 SDK", "rocprofiler error code 37\n", ErrExceedsHWLimit, "37"},
		{"status name", "ROCPROFILER_STATUS_ERROR_EXCEEDS_HW_LIMIT\n", ErrExceedsHWLimit, "EXCEEDS_HW_LIMIT"},
		{"permissions", "Device 0 could not be locked for profiling due to lack of permissions (capability SYS_PERFMON)\n",
			ErrPermission, "perf_event_paranoid"},
		{"a Python error", "Traceback (most recent call last):\nValueError: shapes differ\n", nil, ""},
		{"error 380 is not error 38", "allocated error code 380\n", nil, ""},
	}
	for _, tt := range tests {
		detail, err := classify(tt.output)
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) || !strings.Contains(detail, tt.detail) {
			t.Errorf("%s: classify = %q, %v; want %v mentioning %q", tt.name, detail, err, tt.want, tt.detail)
		}
	}
}

func TestErrorLine(t *testing.T) {
	tests := map[string]string{
		"Traceback (most recent call last):\n  File \"x.py\"\nRuntimeError: HIP error: out of memory\n\n": "RuntimeError: HIP error: out of memory",
		"all fine\nlast words\n": "last words",
		"":                       "",
	}
	for in, want := range tests {
		if got := errorLine(in); got != want {
			t.Errorf("errorLine(%q) = %q, want %q", in, got, want)
		}
	}
}
