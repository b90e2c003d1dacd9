#!/usr/bin/env bash
# ncu's replay passes, and the bytes it saves and restores, per metric set, on
# one torch.relu call of N float32 elements (default 4096*393216, KernelBench
# 19_ReLU's 6.4 GB per tensor) after 3 warm-up calls. The sets: the time, the
# DRAM bytes, the FLOP counters, the two speed-of-light percentages, what
# profile_metrics: roofline asks for, that with the SOL percentages, and the
# full set (KernelAgent's metrics as well).
# Usage: [NCU=ncu] [N=elements] [PY=python3] scripts/ncu_passes.sh
set -u
NCU=${NCU:-ncu}; PY=${PY:-python3}
tmp=$(mktemp -d)
cat > "$tmp/call.py" <<'PY'
import sys, time, torch
n = int(sys.argv[1])
x = torch.randn(n, device="cuda")
for _ in range(3):
    y = torch.relu(x)
torch.cuda.synchronize(); del y; torch.cuda.empty_cache()
t = time.monotonic()
torch.cuda.profiler.start(); y = torch.relu(x); torch.cuda.synchronize(); torch.cuda.profiler.stop()
print("profiled call %.3f s" % (time.monotonic() - t), file=sys.stderr)
PY
DRAM=dram__bytes_read.sum,dram__bytes_write.sum
FLOP=$(printf 'sm__sass_thread_inst_executed_op_%s_pred_on.sum,' fadd fmul ffma hadd hmul hfma dadd dmul dfma); FLOP=${FLOP%,}
TENS=sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp8.sum,sm__ops_path_tensor_src_fp64.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
SOL=sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
KA=sm__cycles_active.avg,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_blocks,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__registers_per_thread,sm__inst_executed.sum,sm__inst_executed_pipe_fp32.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum.per_second,gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,launch__shared_mem_per_block_allocated,l1tex__t_sector_hit_rate.pct,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct,smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct,smsp__sass_average_branch_targets_threads_uniform.pct
P=profiler__replayer_passes,profiler__replayer_bytes_mem_backed_up.sum
echo "| set | passes | bytes saved GB | profiled call | ncu wall ms |"
echo "|---|--:|--:|---|--:|"
run() { # name metrics
  local t0 t1
  t0=$(date +%s%N)
  "$NCU" --csv --page raw --print-units base --clock-control none --profile-from-start off --metrics "$2,$P,gpu__time_duration.sum" \
    --log-file "$tmp/$1.csv" "$PY" "$tmp/call.py" "${N:-1610612736}" 2> "$tmp/$1.err"
  t1=$(date +%s%N)
  "$PY" - "$tmp/$1.csv" "$1" "$(tail -1 "$tmp/$1.err")" "$(( (t1 - t0) / 1000000 ))" <<'PY'
import csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
h, v = rows[0], rows[-1]
get = lambda k: float(v[h.index(k)].replace(",", "")) if k in h else 0.0
print("| %s | %d | %.1f | %s | %s |" % (sys.argv[2], get("profiler__replayer_passes"),
      get("profiler__replayer_bytes_mem_backed_up.sum") / 1e9, sys.argv[3], sys.argv[4]))
PY
}
run time gpu__time_duration.sum
run dram "$DRAM"
run flops "$FLOP"
run sol "$SOL"
run roofline-only "$DRAM,$FLOP,$TENS"
run roofline+sol "$DRAM,$FLOP,$TENS,$SOL"
run full "$KA,$DRAM,$FLOP,$TENS,$SOL"
rm -rf "$tmp"
