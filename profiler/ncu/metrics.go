package ncu

import "slices"

// Metric names used by the parser and the aggregation.
const (
	MetricTime        = "gpu__time_duration.sum"
	MetricDRAMRead    = "dram__bytes_read.sum"
	MetricDRAMWrite   = "dram__bytes_write.sum"
	MetricComputeSOL  = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
	MetricMemorySOL   = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
	metricTensorElap  = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
	metricTensorAct   = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
	metricTensorInstP = "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active"
)

// KernelAgentMetrics are the 29 metrics KernelAgent collects (its
// ncu_profiler.py), kept so prompts and reports can be compared with it.
// Nsight Compute 2025.3.1 on an H200 does not report two of them
// (sm__inst_executed_pipe_fp32.avg.pct_of_peak_sustained_active and
// smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct): ncu
// drops unknown metrics silently, and the profiler lists them in a warning.
var KernelAgentMetrics = []string{
	"sm__cycles_active.avg",
	"sm__warps_active.avg.pct_of_peak_sustained_active",
	"launch__occupancy_limit_blocks",
	"launch__occupancy_limit_registers",
	"launch__occupancy_limit_shared_mem",
	"launch__registers_per_thread",
	"sm__inst_executed.sum",
	"sm__inst_executed_pipe_fp32.avg.pct_of_peak_sustained_active",
	metricTensorInstP,
	MetricDRAMRead,
	MetricDRAMWrite,
	"dram__throughput.avg.pct_of_peak_sustained_elapsed",
	"dram__bytes.sum.per_second",
	"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
	"launch__shared_mem_per_block_allocated",
	"l1tex__t_sector_hit_rate.pct",
	"l1tex__throughput.avg.pct_of_peak_sustained_active",
	"lts__t_sector_hit_rate.pct",
	"lts__throughput.avg.pct_of_peak_sustained_active",
	metricTensorElap,
	"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
	"smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct",
	"smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct",
	"smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
	"smsp__warp_issue_stalled_barrier_per_warp_active.pct",
	"smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct",
	"smsp__sass_average_branch_targets_threads_uniform.pct",
	MetricComputeSOL,
	MetricMemorySOL,
}

// FLOP counters. The sm__sass_thread_inst_executed_op_* counters count
// thread-level instructions (already multiplied by active lanes): an FMA is
// two FLOPs, and a packed half2 instruction (HFMA2) counts once for two
// lanes, so half-precision counts are doubled (see flops). They do not see tensor-core work, which the
// sm__ops_path_tensor_* counters count directly in FLOPs (2·4096³ for a
// 4096³ bf16 GEMM on the H200).
var (
	fp32Add = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"
	fp32Mul = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"
	fp32FMA = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"
	fp16Add = "sm__sass_thread_inst_executed_op_hadd_pred_on.sum"
	fp16Mul = "sm__sass_thread_inst_executed_op_hmul_pred_on.sum"
	fp16FMA = "sm__sass_thread_inst_executed_op_hfma_pred_on.sum"
	fp64Add = "sm__sass_thread_inst_executed_op_dadd_pred_on.sum"
	fp64Mul = "sm__sass_thread_inst_executed_op_dmul_pred_on.sum"
	fp64FMA = "sm__sass_thread_inst_executed_op_dfma_pred_on.sum"

	// tensorOps maps each tensor-path counter to the dtype it measures.
	tensorOps = []struct{ metric, dtype string }{
		{"sm__ops_path_tensor_src_bf16_dst_fp32.sum", "bf16"},
		{"sm__ops_path_tensor_src_fp16.sum", "fp16"},
		{"sm__ops_path_tensor_src_tf32_dst_fp32.sum", "tf32"},
		{"sm__ops_path_tensor_src_fp8.sum", "fp8"},
		{"sm__ops_path_tensor_src_fp64.sum", "fp64"},
	}
)

// RooflineMetrics are what kagent adds to KernelAgent's set: the kernel
// time, the scalar FLOP counters and the tensor-busy metric KernelAgent's
// analyzer read but never collected (its bug T7).
var RooflineMetrics = []string{
	MetricTime,
	fp32Add, fp32Mul, fp32FMA,
	fp16Add, fp16Mul, fp16FMA,
	fp64Add, fp64Mul, fp64FMA,
	metricTensorAct,
}

// OptionalMetrics may be missing on older GPUs or ncu versions (the
// tensor-path FLOP counters were checked on the H200 only). When ncu rejects
// one, the profiler runs again without them.
var OptionalMetrics = func() []string {
	var out []string
	for _, t := range tensorOps {
		out = append(out, t.metric)
	}
	return out
}()

// DefaultMetrics is the full set the profiler asks for: KernelAgent's 29,
// the roofline additions and the optional tensor counters, without
// duplicates.
func DefaultMetrics() []string {
	return dedup(KernelAgentMetrics, RooflineMetrics, OptionalMetrics)
}

// RooflineOnlyMetrics is what places a kernel on the roofline and nothing
// more: its time, the DRAM bytes, the FLOP counters, the tensor pipe's
// activity and the optional tensor counters. Without the speed-of-light
// percentages (about 10 of DefaultMetrics' 17 replay passes on an H100) the
// roofline computes them from the bytes and FLOPs against the GPU's peaks.
func RooflineOnlyMetrics() []string {
	return dedup([]string{MetricTime, MetricDRAMRead, MetricDRAMWrite}, RooflineMetrics, OptionalMetrics)
}

// CoreMetrics is DefaultMetrics without OptionalMetrics.
func CoreMetrics() []string {
	return dedup(KernelAgentMetrics, RooflineMetrics)
}

func dedup(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, m := range l {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// withoutOptional drops OptionalMetrics from a list.
func withoutOptional(ms []string) []string {
	return slices.DeleteFunc(slices.Clone(ms), func(m string) bool { return slices.Contains(OptionalMetrics, m) })
}
