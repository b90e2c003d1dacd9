#!/usr/bin/env python3
"""Side-by-side table of an A/B of sweeps: ``h200-workloads.sh ab`` runs each
problem once per side, alternating, and ``kernelbench_phases.py`` writes each
run's phases.json.

    python3 scripts/ab_table.py A_LABEL B_LABEL A_PHASES.json... -- B_PHASES.json...

Prints, per problem, the wall time, seconds per variant and the median
verification and timing seconds per variant of both sides, the difference
of the walls (B - A), the variants (in brackets those cut after a quick
timing) and the best kernel's time of both sides (a switch that should not
change what the search finds must leave them alike), and the medians over
the problems.
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any, Dict, List, Optional


def _rows(paths: List[str]) -> Dict[Any, Dict[str, Any]]:
    out: Dict[Any, Dict[str, Any]] = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for row in json.load(f).get("problems") or []:
                out[row.get("id")] = row
    return out


def _f(v: Optional[float], digits: int = 1) -> str:
    return f"{v:.{digits}f}" if isinstance(v, (int, float)) else "n/a"


def _median(xs: List[float]) -> Optional[float]:
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def main(argv: List[str]) -> int:
    if len(argv) < 5 or "--" not in argv:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: ab_table.py A_LABEL B_LABEL A_PHASES.json... -- B_PHASES.json...", file=sys.stderr)
        return 2
    la, lb = argv[1], argv[2]
    cut = argv.index("--")
    a, b = _rows(argv[3:cut]), _rows(argv[cut + 1:])
    keys = [k for k in a if k in b]
    cols = ("wall_s", "s_per_variant", "verify_s", "timing_s")
    print(f"| id | problem | wall s {la} | wall s {lb} | {lb} - {la} s | s/variant {la} | s/variant {lb} | "
          f"verify s {la} | verify s {lb} | timing s {la} | timing s {lb} | variants (cut) {la} | "
          f"variants (cut) {lb} | best ms {la} | best ms {lb} |")
    print("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for k in keys:
        x, y = a[k], b[k]
        d = y["wall_s"] - x["wall_s"] if x.get("wall_s") and y.get("wall_s") else None
        print(f"| {k} | {x.get('name')} | {_f(x.get('wall_s'))} | {_f(y.get('wall_s'))} | {_f(d)} | "
              f"{_f(x.get('s_per_variant'), 3)} | {_f(y.get('s_per_variant'), 3)} | "
              f"{_f(x.get('verify_s'), 3)} | {_f(y.get('verify_s'), 3)} | "
              f"{_f(x.get('timing_s'), 3)} | {_f(y.get('timing_s'), 3)} | "
              f"{x.get('variants', 0)} ({x.get('cut', 0)}) | {y.get('variants', 0)} ({y.get('cut', 0)}) | "
              f"{_f(x.get('kernel_ms'), 4)} | {_f(y.get('kernel_ms'), 4)} |")
    med = {c: (_median([a[k].get(c) for k in keys]), _median([b[k].get(c) for k in keys])) for c in cols}
    print(f"\n{len(keys)} problems on both sides; medians: wall {_f(med['wall_s'][0])} s ({la}), "
          f"{_f(med['wall_s'][1])} s ({lb}); s/variant {_f(med['s_per_variant'][0], 3)} ({la}), "
          f"{_f(med['s_per_variant'][1], 3)} ({lb})")
    missing = sorted(set(a) ^ set(b), key=str)
    if missing:
        print(f"on one side only: {', '.join(str(m) for m in missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
