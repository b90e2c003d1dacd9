package ncu

import (
	"fmt"
	"strings"
)

// Mark says how the profiled call is told apart from warm-up calls.
//
// The wrapper script runs the candidate a few times first (Triton compiles
// and autotunes on the first call, and autotuning launches the kernel many
// times with different configs), then runs ONE call inside both markers:
// cudaProfilerStart/Stop (torch.cuda.profiler.start/stop) and an NVTX
// push/pop range named RangeName. Counting launches (--launch-skip) cannot
// do this reliably: how many launches autotuning and warm-up make is not
// known in advance, and ncu counts only launches that pass -k.
type Mark string

// Marks.
const (
	// MarkRange (the default) starts ncu with --profile-from-start off, so
	// only launches between cudaProfilerStart and cudaProfilerStop are
	// profiled. It needs no NVTX support in the program.
	MarkRange Mark = "range"
	// MarkNVTX starts ncu with --nvtx --nvtx-include RangeName/, profiling
	// only launches inside the NVTX push/pop range.
	MarkNVTX Mark = "nvtx"
)

// RangeName is the NVTX range the wrapper pushes around the profiled call.
const RangeName = "kagent_profile"

// Command is one ncu invocation.
type Command struct {
	// Metrics are passed to --metrics (nil = DefaultMetrics()).
	Metrics []string
	// KernelRegex preselects kernels by function name (-k regex:...); ""
	// profiles all kernels in the marked call.
	KernelRegex string
	// Mark selects the profiled call ("" = MarkRange).
	Mark Mark
	// LogFile receives ncu's CSV and messages (--log-file), keeping them
	// apart from the program's own output.
	LogFile string
	// MaxLaunches caps the profiled launches (--launch-count); 0 = no cap.
	// Each profiled launch is replayed once per counter pass, so a call
	// with thousands of launches is slow without one.
	MaxLaunches int
	// Program is the command ncu starts: the interpreter, the wrapper
	// script and its arguments.
	Program []string
}

// Args returns ncu's arguments (not including the ncu binary itself):
//
//	--csv --page raw --print-units base --clock-control none
//	--target-processes all --profile-from-start off
//	[-k regex:RE] [--launch-count N] --metrics M,... --log-file F PROGRAM...
//
// --clock-control none leaves the GPU at its normal clocks so that times
// compare with the benchmarker's; --target-processes all follows the
// program into child processes.
func (c Command) Args() ([]string, error) {
	if len(c.Program) == 0 {
		return nil, fmt.Errorf("build ncu command: %w: no program to profile", ErrConfig)
	}
	metrics := c.Metrics
	if metrics == nil {
		metrics = DefaultMetrics()
	}
	for _, m := range metrics {
		if m == "" || strings.ContainsAny(m, ", ") {
			return nil, fmt.Errorf("build ncu command: %w: bad metric name %q", ErrConfig, m)
		}
	}
	args := []string{
		"--csv", "--page", "raw", "--print-units", "base",
		"--clock-control", "none", "--target-processes", "all",
	}
	switch c.Mark {
	case MarkRange, "":
		args = append(args, "--profile-from-start", "off")
	case MarkNVTX:
		args = append(args, "--nvtx", "--nvtx-include", RangeName+"/")
	default:
		return nil, fmt.Errorf("build ncu command: %w: unknown mark %q (want %q or %q)", ErrConfig, c.Mark, MarkRange, MarkNVTX)
	}
	if c.KernelRegex != "" {
		args = append(args, "-k", "regex:"+c.KernelRegex)
	}
	if c.MaxLaunches > 0 {
		args = append(args, "--launch-count", fmt.Sprint(c.MaxLaunches))
	}
	if len(metrics) > 0 {
		args = append(args, "--metrics", strings.Join(metrics, ","))
	}
	if c.LogFile != "" {
		args = append(args, "--log-file", c.LogFile)
	}
	return append(args, c.Program...), nil
}
