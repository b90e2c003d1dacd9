#!/usr/bin/env python3
"""What one full garbage collection costs a judge, step by step.

    python3 scripts/gc_cost.py [--device cpu|cuda] [PROBLEM [KERNEL]]

Imports what a worker's fork server imports and freezes it (as the server
does before it forks a judge), then runs a judge in this process: load the
problem, time the eager and the torch.compile baselines, verify the kernel.
After each step it prints the least of three gc.collect() times, the
number of objects the collector tracks and the number frozen out of its
sight (the fork server's imports; the compile baseline's, longlived.py;
KAGENT_FREEZE_BASELINE=0 shows the cost without). The judge collects in full whenever
it closes runners to make room for a verification (room.Room._make_room), so
this is what each such collection costs. Defaults: the add_relu problem and
kernel of platform/worker/testdata on the CPU.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "harness"))
TESTDATA = os.path.join(ROOT, "platform", "worker", "testdata")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", nargs="?", default=os.path.join(TESTDATA, "problems", "add_relu", "problem.py"))
    ap.add_argument("kernel", nargs="?", default=os.path.join(TESTDATA, "candidates", "cpu", "add_relu_ok.py"))
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    if a.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from kagent_harness import worker as kw

    kind = kw.prepare(a.device)
    gc.freeze()
    from kagent_harness.device import Device

    w = kw.Worker(None, Device(kind))
    print("| after | full collection ms | objects tracked | objects frozen |")
    print("|---|--:|--:|--:|")

    def row(label: str) -> None:
        best = min(_timed(gc.collect) for _ in range(3))
        print(f"| {label} | {best * 1000:.1f} | {len(gc.get_objects())} | {gc.get_freeze_count()} |")

    row("the fork server's imports, frozen")
    info = w.load_problem({"problem_path": os.path.abspath(a.problem), "seeds": [5, 6, 424242]})
    row("load_problem")
    pid = info["problem_id"]
    w.bench({"problem_id": pid, "target": "eager", "warmup_ms": 1, "rep_ms": 5})
    row("the eager baseline's timing")
    w.bench({"problem_id": pid, "target": "compile", "warmup_ms": 1, "rep_ms": 5})
    row("the torch.compile baseline's timing")
    w.verify({"problem_id": pid, "candidate_path": os.path.abspath(a.kernel), "require_triton": kind == "cuda"})
    row("a verification")
    took = _timed(lambda: w.unload_problem({"problem_id": pid}))
    row(f"unload_problem (the op took {took * 1000:.0f} ms)")
    return 0


def _timed(fn) -> float:
    t = time.monotonic()
    fn()
    return time.monotonic() - t


if __name__ == "__main__":
    sys.exit(main())
