#!/usr/bin/env python3
"""The spread of each problem's baselines over several sweeps.

    python3 scripts/baseline_spread.py PHASES.json [PHASES.json ...]

Each file is a sweep's phases JSON (scripts/kernelbench_phases.py: a
"problems" list with each problem's id, name, eager_ms and compile_ms).
Prints, per problem, how many sweeps timed it and the spread of its compile
and eager baselines over them: (largest - least) / least.
"""

from __future__ import annotations

import json
import sys
from typing import Dict, List, Tuple


def main(paths: List[str]) -> int:
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    seen: Dict[int, Tuple[str, List[float], List[float]]] = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                problems = json.load(f)["problems"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"baseline_spread: {path}: not a sweep's phases JSON ({exc}); pass the phases.json that "
                  f"scripts/kernelbench_phases.py writes into a sweep dir", file=sys.stderr)
            return 2
        for p in problems:
            name, comp, eager = seen.setdefault(int(p["id"]), (str(p.get("name", "")), [], []))
            if p.get("compile_ms"):
                comp.append(float(p["compile_ms"]))
            if p.get("eager_ms"):
                eager.append(float(p["eager_ms"]))

    def spread(xs: List[float]) -> str:
        if len(xs) < 2:
            return "-"
        return f"{min(xs):.4f}-{max(xs):.4f} ({100 * (max(xs) / min(xs) - 1):.2f}%)"

    print(f"{len(paths)} sweeps; ms, least-largest (spread)\n")
    print("| id | problem | sweeps | compile ms | eager ms |")
    print("|--:|---|--:|---|---|")
    for pid in sorted(seen):
        name, comp, eager = seen[pid]
        print(f"| {pid} | {name} | {len(comp)} | {spread(comp)} | {spread(eager)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
