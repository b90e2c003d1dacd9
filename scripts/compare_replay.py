#!/usr/bin/env python3
"""Replays the promotion step's solo rule over the comparisons a sweep made.

    python3 scripts/compare_replay.py SWEEP_DIR [SWEEP_DIR...] [--min-pct 2] [--noise-factor 3]

For every interleaved comparison of a candidate with the best (each run's
compare.json), it takes the two solo timings (timing.json of both) and says
whether the rule of agent/promote.go settledBySolo would have decided it
without the comparison: the candidate's own timing faster than the best's by
less than min_improvement_pct minus the margin (half the threshold, or noise
factor times the larger robust CV). Prints one row per comparison and the
counts; a settled comparison that the interleaved timing promoted would be a
promotion the rule loses.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from typing import Any, Dict


def robust_cv(t: Dict[str, Any]) -> float:
    p20, p80, m = t.get("p20_ms"), t.get("p80_ms"), t.get("median_ms")
    if p20 and p80 and m:
        return (p80 - p20) / (2 * 0.8416) / m
    return float(t.get("cv") or 0.0)


def timings(run: str) -> Dict[str, Dict[str, Any]]:
    out = {}
    for path in glob.glob(os.path.join(run, "round*", "*", "timing.json")):
        cand = os.path.dirname(path)
        rnd, name = os.path.basename(os.path.dirname(cand)), os.path.basename(cand)
        cid = "input" if name == "input" else f"r{int(rnd[5:])}c{name[4:]}"
        with open(path, encoding="utf-8") as f:
            out[cid] = json.load(f)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--min-pct", type=float, default=2.0)
    ap.add_argument("--noise-factor", type=float, default=3.0)
    args = ap.parse_args()
    print("| problem | candidate | solo % faster | margin % | settled | interleaved % faster | promoted |")
    print("|---|---|--:|--:|---|--:|---|")
    total = settled = lost = 0
    drift = 0.0
    for sweep in args.sweeps:
        for run in sorted(glob.glob(os.path.join(sweep, "runs", "*"))):
            tims = timings(run)
            for path in sorted(glob.glob(os.path.join(run, "round*", "cand*", "compare.json"))):
                with open(path, encoding="utf-8") as f:
                    d = json.load(f)["decision"]
                best, cand = tims.get(d["best"]), tims.get(d["candidate"])
                if not best or not cand:
                    continue
                solo = (best["median_ms"] - cand["median_ms"]) / best["median_ms"] * 100
                margin = max(args.min_pct / 2, args.noise_factor * max(robust_cv(best), robust_cv(cand)) * 100)
                s = args.min_pct > 0 and solo + margin < args.min_pct
                total += 1
                settled += s
                lost += s and bool(d["promoted"])
                if s:
                    drift = max(drift, abs(d["improvement_pct"] - solo))
                print(f"| {os.path.basename(run)} | {d['candidate']} | {solo:.2f} | {margin:.2f} | {'yes' if s else 'no'} | "
                      f"{d['improvement_pct']:.2f} | {'yes' if d['promoted'] else 'no'} |")
    print()
    print(f"{total} comparisons; {settled} settled by the solo timings; {lost} of those promoted by the interleaved "
          f"timing; largest difference between solo and interleaved among the settled {drift:.2f}%.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
