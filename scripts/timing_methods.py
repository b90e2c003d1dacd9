#!/usr/bin/env python3
"""Ways of timing one kernel call on an NVIDIA GPU, against Nsight Compute.

    python3 scripts/timing_methods.py [--cases relu-12M,softmax-16M] [--calls 50] [--ncu ncu]
        [--ncu-runs K] [--ncu-held] [--json FILE]

For each case (a supplied kernel of bench/kernelbench/level1 on inputs of
the size named) it times the call the way kagent's runner does and in other
ways, each after the same hold (harness/kagent_harness/hold.py: the L2 flush
buffer read, every SM held), on the same inputs, and prints the median
microseconds of each way with its spread over --repeats timings, and ncu's
``gpu__time_duration`` (caches flushed, clocks as they are) with each way's
difference from it:

- events: two CUDA events around the call (kagent's method today);
- profiler span: the device timestamps of the call's own kernels, copies and
  fills as the CUDA profiling interface records them (torch.profiler), from
  the first start to the last end;
- profiler sum: the same records' durations added up;
- graph: the calls captured in a CUDA graph, each after a flush-only hold,
  replayed between two events, less a graph of the holds alone, per call;
- events less bracket: events less the median of two events recorded with
  nothing between them after the same hold (the events' own cost).

The case ``empty`` (a one-program Triton kernel that stores one value)
gives the floor of each way and of ncu: what a launch of no work measures.

With --ncu, ncu runs this script once per case (``--profile-case``;
--ncu-runs times, the median of their medians the reference) and profiles
the calls made inside an NVTX range, so no kernel of the other ways is in
its numbers. --ncu-held profiles each call again right after the hold
kagent times it after (the hold outside the range): whether the state the
device is in before a call (its clocks, what the hold leaves in its caches)
moves ncu's number. Nothing here changes kagent's timing: it measures which
way agrees with ncu before kagent's runner adopts it.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import os
import statistics
import subprocess
import sys
from typing import Any, Callable, Dict, List, Tuple

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "harness"))

from kagent_harness import hold  # noqa: E402

# name -> (kernel folder under bench/kernelbench/level1, input shape)
CASES: Dict[str, Tuple[str, Tuple[int, ...]]] = {
    "relu-1M": ("19_ReLU", (16, 65536)),
    "relu-4M": ("19_ReLU", (64, 65536)),
    "relu-10M": ("19_ReLU", (160, 65536)),
    "relu-12M": ("19_ReLU", (192, 65536)),
    "softmax-16M": ("23_Softmax", (1024, 16384)),
    "gelu-32M": ("26_GELU", (512, 65536)),
    "relu-128M": ("19_ReLU", (2048, 65536)),
}
RANGE = "kagent_timed"
HOLD_MS = 0.3

try:
    import triton
    import triton.language as tl

    @triton.jit
    def _one_store(x_ptr):
        tl.store(x_ptr + tl.program_id(0), 1.0)

except ImportError:  # the script then has no "empty" case
    triton = None


def _call(case: str) -> Tuple[Callable[[], Any], torch.Tensor]:
    if case == "empty":
        if triton is None:
            raise SystemExit("timing_methods: the empty case needs triton")
        one = torch.zeros(1, device="cuda")
        return (lambda: _one_store[(1,)](one)), one
    folder, shape = CASES[case]
    path = os.path.join(ROOT, "bench", "kernelbench", "level1", folder, "kernel.py")
    spec = importlib.util.spec_from_file_location(f"kernel_{folder}", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    model = mod.ModelNew().cuda()
    x = torch.randn(*shape, device="cuda")
    return (lambda: model(x)), x


def _flush() -> torch.Tensor:
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20))
    return torch.zeros(2 * l2 // 4, dtype=torch.int32, device="cuda")


def _events(f: Callable[[], Any], flush: torch.Tensor, calls: int) -> List[float]:
    out = []
    for _ in range(calls):
        torch.cuda.synchronize()
        hold.hold(HOLD_MS, flush)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3)
    return out


def _profiler(f: Callable[[], Any], flush: torch.Tensor, calls: int) -> Tuple[List[float], List[float]]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            torch.cuda.synchronize()
            hold.hold(HOLD_MS, flush)
            f()
        torch.cuda.synchronize()
    recs = []
    for ev in prof.profiler.kineto_results.events():
        if str(ev.device_type()).endswith("CUDA") and not ev.is_user_annotation():
            recs.append((ev.start_ns(), ev.start_ns() + ev.duration_ns(), ev.name()))
    recs.sort()
    spans: List[float] = []
    sums: List[float] = []
    group: List[Tuple[int, int, str]] = []

    def close() -> None:
        if group:
            spans.append((max(e for _, e, _ in group) - min(s for s, _, _ in group)) / 1e3)
            sums.append(sum(e - s for s, e, _ in group) / 1e3)

    for rec in recs:
        if rec[2] == "_hold":
            close()
            group = []
        else:
            group.append(rec)
    close()
    return spans[-calls:], sums[-calls:]


def _graph(f: Callable[[], Any], flush: torch.Tensor, calls: int) -> List[float]:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f()  # warm on the side stream before capture
    torch.cuda.current_stream().wait_stream(s)
    g_full, g_hold = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g_full):
        for _ in range(calls):
            hold.hold(0.0, flush)
            f()
    with torch.cuda.graph(g_hold):
        for _ in range(calls):
            hold.hold(0.0, flush)

    def replay(g: Any) -> float:
        torch.cuda.synchronize()
        hold.hold(HOLD_MS, flush)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1e3

    out = []
    for _ in range(5):
        out.append((replay(g_full) - replay(g_hold)) / calls)
    return out


def _ncu_runs(ncu: str, case: str, calls: int, runs: int, held: bool) -> Dict[str, Any]:
    """ncu's per-call median in each of ``runs`` processes, and their median."""
    per_run = [_ncu(ncu, case, calls, held) for _ in range(max(1, runs))]
    ok = [r for r in per_run if "us" in r]
    if not ok:
        return per_run[0]
    meds = [r["us"] for r in ok]
    return {"us": statistics.median(meds), "runs_us": meds, "kernels": ok[0]["kernels"],
            "all_us": [x for r in ok for x in r["all_us"]], "failed_runs": len(per_run) - len(ok)}


def _ncu(ncu: str, case: str, calls: int, held: bool = False) -> Dict[str, Any]:
    cmd = [ncu, "--csv", "--print-units", "base", "--cache-control", "all", "--clock-control", "none",
           "--metrics", "gpu__time_duration.sum", "--nvtx", "--nvtx-include", f"{RANGE}/",
           sys.executable, os.path.abspath(__file__), "--profile-case", case, "--calls", str(calls)]
    if held:
        cmd.append("--profile-held")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    rows = [line for line in p.stdout.splitlines() if line.startswith('"')]
    times = []
    for r in csv.DictReader(io.StringIO("\n".join(rows))):
        if r.get("Metric Name") == "gpu__time_duration.sum":
            times.append(float(r["Metric Value"].replace(",", "")) / 1e3)  # ns -> us
    if not times:
        return {"error": (p.stderr or p.stdout)[-400:]}
    per_call = [sum(times[i::calls]) for i in range(calls)] if len(times) % calls == 0 else times
    return {"us": statistics.median(per_call), "kernels": len(times), "all_us": times}


def _ncu_cell(n: Any) -> str:
    """ncu's reference for a table: the median, and the range over runs."""
    if not n or "us" not in n:
        return "-"
    runs = n.get("runs_us") or []
    spread = f" ({min(runs):.2f}-{max(runs):.2f}, {len(runs)} runs)" if len(runs) > 1 else ""
    return f"{n['us']:.2f}{spread}"


def _summary(xs: List[float]) -> Dict[str, float]:
    med = statistics.median(xs)
    return {"us": med, "cv": statistics.pstdev(xs) / statistics.mean(xs) if len(xs) > 1 else 0.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="empty,relu-4M,relu-12M,softmax-16M,gelu-32M,relu-128M")
    ap.add_argument("--calls", type=int, default=50, help="timed calls per timing")
    ap.add_argument("--repeats", type=int, default=5, help="timings per way (their medians' spread is the CV)")
    ap.add_argument("--ncu", help="Nsight Compute's executable: profile each case")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--ncu-runs", type=int, default=1,
                    help="ncu processes per case (each profiles up to 5 calls); the median of their medians is the reference")
    ap.add_argument("--ncu-held", action="store_true",
                    help="also profile each call right after the hold that kagent times it after (outside the profiled range)")
    ap.add_argument("--profile-case", help=argparse.SUPPRESS)
    ap.add_argument("--profile-held", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("timing_methods: needs a CUDA GPU", file=sys.stderr)
        return 2
    if args.profile_case:
        f, _ = _call(args.profile_case)
        flush = _flush() if args.profile_held else None
        if flush is not None:
            hold.hold(HOLD_MS, flush)  # compiled before the profiled calls
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        calls = min(args.calls, 5)
        if flush is None:
            torch.cuda.nvtx.range_push(RANGE)
            for _ in range(calls):
                f()
            torch.cuda.nvtx.range_pop()
        else:
            # Each call right after the hold, as kagent times it; the hold's
            # kernels are outside the range and so not profiled.
            for _ in range(calls):
                hold.hold(HOLD_MS, flush)
                torch.cuda.nvtx.range_push(RANGE)
                f()
                torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        return 0
    flush = _flush()
    hold.hold(HOLD_MS, flush)  # compile the hold first
    rows = []
    for case in args.cases.split(","):
        f, _ = _call(case)
        for _ in range(5):
            f()
        torch.cuda.synchronize()
        ways: Dict[str, List[float]] = {"events": [], "events_less_bracket": [], "profiler_span": [], "profiler_sum": [],
                                        "graph": []}
        for _ in range(args.repeats):
            ways["events"].append(statistics.median(_events(f, flush, args.calls)))
            # The events' own cost: the same timing around no call at all.
            bracket = statistics.median(_events(lambda: None, flush, args.calls))
            ways["events_less_bracket"].append(ways["events"][-1] - bracket)
            span, total = _profiler(f, flush, args.calls)
            ways["profiler_span"].append(statistics.median(span))
            ways["profiler_sum"].append(statistics.median(total))
            try:
                ways["graph"].append(statistics.median(_graph(f, flush, min(args.calls, 20))))
            except Exception as exc:  # noqa: BLE001 - a call that cannot be captured
                ways.pop("graph", None)
                print(f"{case}: graph: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        row: Dict[str, Any] = {"case": case, **{k: _summary(v) for k, v in ways.items() if v}}
        if args.ncu:
            row["ncu"] = _ncu_runs(args.ncu, case, min(args.calls, 5), args.ncu_runs, False)
            if args.ncu_held:
                row["ncu_held"] = _ncu_runs(args.ncu, case, min(args.calls, 5), args.ncu_runs, True)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    names = ["events", "events_less_bracket", "profiler_span", "profiler_sum", "graph"]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; median us of {args.calls} calls, "
          f"CV over {args.repeats} timings; difference from ncu's gpu__time_duration\n")
    print("| case | ncu us | " + " | ".join(names) + " |")
    print("|---|--:|" + "---|" * len(names))
    for r in rows:
        ref = r.get("ncu", {}).get("us")
        cells = []
        for k in names:
            if k not in r:
                cells.append("-")
                continue
            d = f", {100 * (r[k]['us'] - ref) / ref:+.1f}%" if ref else ""
            cells.append(f"{r[k]['us']:.2f} (CV {100 * r[k]['cv']:.2f}%{d})")
        print(f"| {r['case']} | {_ncu_cell(r.get('ncu'))} | " + " | ".join(cells) + " |")
    held = [r for r in rows if "us" in (r.get("ncu_held") or {})]
    if held:
        print("\nncu with each profiled call right after the hold (as kagent times it):\n")
        print("| case | ncu us | ncu after the hold us | events less bracket |")
        print("|---|--:|--:|--:|")
        for r in held:
            ref, els = r["ncu_held"]["us"], r.get("events_less_bracket", {}).get("us")
            d = f"{els:.2f} ({100 * (els - ref) / ref:+.1f}%)" if els else "-"
            print(f"| {r['case']} | {_ncu_cell(r.get('ncu'))} | {_ncu_cell(r['ncu_held'])} | {d} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
