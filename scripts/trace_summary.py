#!/usr/bin/env python3
"""Where each verification and timing went, from KAGENT_TRACE=1 logs.

    python3 scripts/trace_summary.py STDERR_DIR [--skip 5] [--json FILE]

STDERR_DIR is a KAGENT_WORKER_STDERR folder of a run with KAGENT_TRACE=1
(scripts/h200-workloads.sh sweep keeps it as stderr/ in sweep-json.tgz).
A judge's log holds one "trace op NAME S s" line per request it served, with
its runners' "trace op ..." / "trace start ..." lines and its own
"trace make_room ..." lines before it. For the busiest judge of the folder,
it prints the mean of each verify, bench and compare request (after the
first --skip of each, which load the problem and compile) and what was
inside it: the runners' ops (r.*: the candidate's runner and the spare's
start and device context, r.start and r.context, which run alongside and
count where their lines fall); r.call1_* and r.calln_* split each runner's
first call and its later ones into poisoning free memory, the call itself
and handing its output back) and the judge's room-making. What is not
listed is the judge's own work: building inputs, comparing outputs, checks.
It then counts the spares the judge started ("trace spare lent N of M"): how
many were lent their buffers ahead, and how many buffers failed to be made.
The runners' lines are written by the candidates' own processes: a candidate
could print lines of that form, so they are a diagnosis, never a measurement
anything is decided on; the judge's lines are its own.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys
from typing import Any, Dict, List, Tuple

WORKER_OP = re.compile(r"kagent_harness: trace op (\w+) ([0-9.]+) s")
ROOM = re.compile(r"kagent_harness: trace (make_room) ([0-9.]+) s")
RUNNER = re.compile(r"kagent_harness\.runner: trace (?:op (\w+)|(start)) ([0-9.]+) s")
SPARE = re.compile(r"kagent_harness: trace spare (lent|lend_failed) ([0-9]+)")
OPS = ("verify", "bench", "compare")


def parse(path: str) -> Dict[str, List[Tuple[float, List[Tuple[str, float]]]]]:
    per: Dict[str, List[Tuple[float, List[Tuple[str, float]]]]] = {op: [] for op in OPS}
    inside: List[Tuple[str, float]] = []
    with open(path, errors="replace") as f:
        for line in f:
            m = WORKER_OP.search(line)
            if m:
                if m.group(1) in per:
                    per[m.group(1)].append((float(m.group(2)), inside))
                inside = []
                continue
            m = ROOM.search(line)
            if m:
                inside.append((m.group(1), float(m.group(2))))
                continue
            m = RUNNER.search(line)
            if m:
                inside.append(("r." + (m.group(1) or m.group(2)), float(m.group(3))))
    return per


def spares(path: str) -> Dict[str, Any]:
    """The spares a judge started: how many, how many were lent buffers
    ahead (and their mean bytes), how many lends failed."""
    started, lent, failed, lent_bytes = 0, 0, 0, 0
    with open(path, errors="replace") as f:
        for line in f:
            m = SPARE.search(line)
            if not m:
                continue
            n = int(m.group(2))
            if m.group(1) == "lend_failed":
                failed += 1
                continue
            started += 1
            if n:
                lent += 1
                lent_bytes += n
    return {"started": started, "lent": lent, "lent_mean_bytes": lent_bytes // lent if lent else 0,
            "lend_failed": failed}


def summary(per: Dict[str, List[Tuple[float, List[Tuple[str, float]]]]], skip: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for op, rows in per.items():
        rows = rows[skip:]
        if not rows:
            continue
        parts: Dict[str, float] = collections.Counter()
        for _, inside in rows:
            for k, v in inside:
                parts[k] += v / len(rows)
        out[op] = {"n": len(rows), "mean_s": round(sum(r[0] for r in rows) / len(rows), 4),
                   "inside_s": {k: round(v, 4) for k, v in sorted(parts.items(), key=lambda kv: -kv[1]) if v >= 0.0005}}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("stderr_dir")
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    logs = glob.glob(os.path.join(a.stderr_dir, "worker-*.log"))
    if not logs:
        print(f"{a.stderr_dir}: no worker-*.log (KAGENT_WORKER_STDERR folder of a KAGENT_TRACE=1 run)", file=sys.stderr)
        return 2
    busiest = max(logs, key=lambda p: sum(len(v) for v in parse(p).values()))
    s = summary(parse(busiest), a.skip)
    print(f"{os.path.basename(busiest)} (the busiest judge), requests after the first {a.skip} of each:\n")
    print("| request | n | mean s | inside it (mean s) |")
    print("|---|--:|--:|---|")
    for op, row in s.items():
        inside = ", ".join(f"{k} {v:.3f}" for k, v in row["inside_s"].items())
        print(f"| {op} | {row['n']} | {row['mean_s']:.3f} | {inside} |")
    sp = spares(busiest)
    print(f"\nspares started: {sp['started']}; lent buffers ahead: {sp['lent']} "
          f"(mean {sp['lent_mean_bytes'] / 1e9:.2f} GB); lends that failed: {sp['lend_failed']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"log": os.path.basename(busiest), "skip": a.skip, "requests": s, "spares": sp}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
