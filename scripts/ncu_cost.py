#!/usr/bin/env python3
"""Where the time of one Nsight Compute profile goes, by tensor size and metric set.

    python3 scripts/ncu_cost.py [--ncu ncu] [--cases small-time,large-many,...] [--json FILE]

Each case runs ncu (kernel replay, --clock-control none, --profile-from-start
off) on a child process of this script that builds the supplied ReLU kernel
of bench/kernelbench/level1 on a float32 input of the size named, warms it up
with three calls and profiles one call between cudaProfilerStart/Stop. It
prints, per case: ncu's wall time, the child's own phases (start-up with
imports, inputs, warm-up, the profiled call: ncu's replay passes happen
inside that call), and the replay passes ncu reports.

The cases vary what could make a large problem's profile slow:
- the tensor size (64 MB or 6.4 GB per tensor), for the cost of saving and
  restoring memory between replay passes;
- the metric set: one metric (one pass), a roofline-sized set, the parts
  of kagent's sets (DRAM bytes, FLOP counters, the speed-of-light
  percentages) and kagent's two sets themselves (profile_metrics roofline
  and full);
- an untouched buffer in the profiled process (does ncu save every
  allocation, or only what the kernel touches?);
- another process holding most of the device memory, as warm workers do
  during a run (is the saved memory then kept in host memory?).

kagent's own metric set is profiled by ``kagent profile`` (see
scripts/h200-workloads.sh, step ncucost); this script measures the causes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

SMALL = 16 << 20  # float32 elements: 64 MB
LARGE = 4096 * 393216  # KernelBench 19_ReLU at its own size: 6.4 GB

# A roofline-sized set: DRAM bytes, throughputs, hit rates, stalls, FLOP and
# tensor counters from several units (several replay passes on an H200).
MANY = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "lts__throughput.avg.pct_of_peak_sustained_active",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
    "smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
]
# kagent's own sets, copies of profiler/ncu's (TestNCUCostSets keeps them
# equal): profile_metrics roofline (RooflineOnlyMetrics) and full
# (DefaultMetrics: KernelAgent's 29 metrics and the roofline's).
DRAM = ["dram__bytes_read.sum", "dram__bytes_write.sum"]
FLOPS = ["sm__sass_thread_inst_executed_op_%s_pred_on.sum" % op
         for op in ("fadd", "fmul", "ffma", "hadd", "hmul", "hfma", "dadd", "dmul", "dfma")]
TENSOR = [
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp8.sum",
    "sm__ops_path_tensor_src_fp64.sum",
]
SOL = ["sm__throughput.avg.pct_of_peak_sustained_elapsed",
       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
KERNELAGENT = [
    "sm__cycles_active.avg",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__registers_per_thread",
    "sm__inst_executed.sum",
    "sm__inst_executed_pipe_fp32.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
    *DRAM,
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes.sum.per_second",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__shared_mem_per_block_allocated",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__t_sector_hit_rate.pct",
    "lts__throughput.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct",
    "smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
    "smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    *SOL,
]
KAGENT_ROOFLINE = ["gpu__time_duration.sum", *DRAM, *FLOPS, *TENSOR]
KAGENT_FULL = KERNELAGENT + ["gpu__time_duration.sum", *FLOPS, *TENSOR]
METRICS = {
    "time": ["gpu__time_duration.sum"],
    "many": MANY,
    # What each part of kagent's sets costs in replay passes.
    "dram": DRAM,
    "flops": FLOPS,
    "sol": SOL,
    "roofline": KAGENT_ROOFLINE,
    "full": KAGENT_FULL,
}

# name -> (elements, metric set, untouched GB in the profiled process, GB held by another process)
CASES: Dict[str, tuple] = {
    "small-time": (SMALL, "time", 0, 0),
    "small-many": (SMALL, "many", 0, 0),
    "large-time": (LARGE, "time", 0, 0),
    "large-many": (LARGE, "many", 0, 0),
    "large-many-extra40": (LARGE, "many", 40, 0),
    "large-many-hog": (LARGE, "many", 0, -1),  # -1: all but 24 GB of what is free
    "large-dram": (LARGE, "dram", 0, 0),
    "large-flops": (LARGE, "flops", 0, 0),
    "large-sol": (LARGE, "sol", 0, 0),
    "large-roofline": (LARGE, "roofline", 0, 0),
    "large-full": (LARGE, "full", 0, 0),
}
PHASE = "ncu_cost phases:"


def child(elements: int, extra_gb: float) -> None:
    t0 = time.monotonic()
    import torch

    path = os.path.join(ROOT, "bench", "kernelbench", "level1", "19_ReLU", "kernel.py")
    spec = importlib.util.spec_from_file_location("kernel_relu", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    model = mod.ModelNew().cuda()
    t1 = time.monotonic()
    x = torch.randn(elements, device="cuda")
    extra = torch.zeros(int(extra_gb * (1 << 30)) // 4, device="cuda") if extra_gb > 0 else None
    torch.cuda.synchronize()
    t2 = time.monotonic()
    with torch.no_grad():
        for _ in range(3):
            model(x)
        torch.cuda.synchronize()
        t3 = time.monotonic()
        torch.cuda.profiler.start()
        model(x)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    t4 = time.monotonic()
    del extra
    print(f"{PHASE} start {t1 - t0:.3f} inputs {t2 - t1:.3f} warmup {t3 - t2:.3f} profiled {t4 - t3:.3f}",
          file=sys.stderr, flush=True)


def hold(gb: float) -> None:
    """Hold gb GB of device memory (-1: all but 24 GB of the free memory) until killed."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    gb = free / (1 << 30) - 24 if gb < 0 else gb
    t = torch.empty(int(gb * (1 << 30)), dtype=torch.uint8, device="cuda").fill_(1)
    torch.cuda.synchronize()
    print("held %.1f GB" % gb, flush=True)
    time.sleep(3600)
    del t


def _hog(gb: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--hold", str(gb)], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline() if p.stdout else ""
    if not line.startswith("held"):
        p.kill()
        raise SystemExit("ncu_cost: the memory-holding process did not start")
    return p


def run_case(ncu: str, name: str) -> Dict[str, Any]:
    elements, mset, extra_gb, hog_gb = CASES[name]
    metrics = METRICS[mset] + ["profiler__replayer_passes"]
    hog: Optional[subprocess.Popen] = _hog(hog_gb) if hog_gb else None
    try:
        cmd = [ncu, "--csv", "--print-units", "base", "--clock-control", "none", "--profile-from-start", "off",
               "--metrics", ",".join(metrics), sys.executable, os.path.abspath(__file__),
               "--child", str(elements), str(extra_gb)]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wall = time.monotonic() - t0
    finally:
        if hog:
            hog.kill()
            hog.wait()
    out = p.stdout + "\n" + p.stderr
    row: Dict[str, Any] = {"case": name, "gb_per_tensor": elements * 4 / 1e9, "metrics": len(metrics) - 1,
                           "extra_gb": extra_gb, "hog": bool(hog_gb), "ncu_s": round(wall, 3), "rc": p.returncode}
    m = re.search(PHASE + r" start (\S+) inputs (\S+) warmup (\S+) profiled (\S+)", out)
    if m:
        row.update(start_s=float(m[1]), inputs_s=float(m[2]), warmup_s=float(m[3]), profiled_s=float(m[4]))
    passes = re.findall(r'"profiler__replayer_passes","[^"]*","([0-9.,]+)"', out)
    if not passes:  # ncu's progress line: ... 100% - 9 passes
        passes = re.findall(r"([0-9]+) passes", out)
    if passes:
        row["passes"] = int(float(passes[0].replace(",", "")))
    if p.returncode != 0 or not m:
        row["error"] = out[-600:]
    return row


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(int(sys.argv[2]), float(sys.argv[3]))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--hold":  # also used by scripts/h200-workloads.sh
        hold(float(sys.argv[2]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    rows: List[Dict[str, Any]] = []
    for name in args.cases.split(","):
        rows.append(run_case(args.ncu, name))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    cols = ["ncu_s", "start_s", "inputs_s", "warmup_s", "profiled_s"]
    print("| case | GB per tensor | metrics | passes | " + " | ".join(c[:-2] + " s" for c in cols) + " |")
    print("|---|--:|--:|--:|" + "--:|" * len(cols))
    for r in rows:
        cells = [f"{r[c]:.2f}" if c in r else "-" for c in cols]
        print(f"| {r['case']} | {r['gb_per_tensor']:.2f} | {r['metrics']} | {r.get('passes', '-')} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
