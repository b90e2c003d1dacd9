#!/usr/bin/env python3
"""The spread of kagent's times across separate runs: each file of DIR is one
`kagent eval --json` of one kernel dir, named NAME-CLOCK-RUN.json (what the
`baselines` step of scripts/h200-workloads.sh writes). Each run is a fresh
worker, as each sweep is, so the spread of a baseline's medians over the runs
is what a sweep repeated on the same problem would see.

    python3 scripts/eval_spread.py DIR [--json FILE]

Prints one row per problem, clock and target (input, eager, compile): each
run's median, the spread ((largest - smallest) / smallest of the medians), the
largest within-run CV, the clocks the runs named and the largest share of
late calls in a run (calls the host enqueued after the hold ahead of them had
ended; above 10% a device-clock time is host-bound). The issue's target: a
compile baseline's spread at most 3%.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
from typing import Any, Dict, List, Tuple

NAME = re.compile(r"^(?P<problem>.+)-(?P<clock>[a-z]+)-(?P<run>\d+)\.json$")


def read(folder: str) -> Tuple[Dict[Tuple[str, str, str], List[Dict[str, Any]]], List[str]]:
    """Rows by (problem, clock, target), in run order; and the files that
    could not be read, each with why."""
    rows: Dict[Tuple[str, str, str], List[Dict[str, Any]]] = {}
    bad: List[str] = []
    files = []
    for path in glob.glob(os.path.join(folder, "*.json")):
        m = NAME.match(os.path.basename(path))
        if m is None:
            continue
        files.append((m["problem"], m["clock"], int(m["run"]), path))
    for problem, clock, _, path in sorted(files):
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            timings = doc["timings"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            bad.append(f"{os.path.basename(path)}: {type(exc).__name__}: {exc}"[:200])
            continue
        for t in timings:
            if not isinstance(t, dict) or not isinstance(t.get("median_ms"), (int, float)):
                continue
            rows.setdefault((problem, clock, str(t.get("target"))), []).append(t)
    return rows, bad


def summarize(rows: Dict[Tuple[str, str, str], List[Dict[str, Any]]]) -> List[Dict[str, Any]]:
    out = []
    order = {"input": 0, "eager": 1, "compile": 2}
    for (problem, clock, target), ts in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                          order.get(kv[0][2], 9), kv[0][2])):
        medians = [float(t["median_ms"]) for t in ts]
        lo, hi = min(medians), max(medians)
        out.append({
            "problem": problem, "clock": clock, "target": target, "runs": len(ts),
            "medians_ms": medians,
            "spread_pct": (hi - lo) / lo * 100 if lo > 0 else None,
            "max_cv_pct": max(float(t.get("cv") or 0) for t in ts) * 100,
            "clocks": sorted({str(t.get("clock") or "") for t in ts}),
            "max_late_pct": max(float(t.get("late_calls") or 0) / max(int(t.get("n") or 0), 1) for t in ts) * 100,
        })
    return out


def table(summary: List[Dict[str, Any]]) -> str:
    lines = ["| problem | clock asked | target | runs | medians ms | spread | max CV | clocks used | max late |",
             "|---|---|---|--:|---|--:|--:|---|--:|"]
    for r in summary:
        spread = "–" if r["spread_pct"] is None else f"{r['spread_pct']:.2f}%"
        lines.append(f"| {r['problem']} | {r['clock']} | {r['target']} | {r['runs']} | "
                     f"{' '.join(f'{m:.4f}' for m in r['medians_ms'])} | {spread} | {r['max_cv_pct']:.2f}% | "
                     f"{', '.join(r['clocks'])} | {r['max_late_pct']:.0f}% |")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.dir):
        print(f"eval_spread: {a.dir} is not a folder", file=sys.stderr)
        return 2
    rows, bad = read(a.dir)
    summary = summarize(rows)
    print(table(summary))
    for b in bad:
        print(f"unreadable: {b}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"rows": summary, "unreadable": bad}, f, indent=1)
    return 0 if summary else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
