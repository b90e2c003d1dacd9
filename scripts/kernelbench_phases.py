#!/usr/bin/env python3
"""Where a sweep's time went, per problem: the sweep dir's results.json, each
run's events.jsonl (round times), and each candidate's verdict.json and
timing.json (the worker's phases).

    python3 scripts/kernelbench_phases.py SWEEP_DIR

Prints a table and writes SWEEP_DIR/phases.json and SWEEP_DIR/phases.md.
Columns: wall s (the problem's whole time), round 0 s (first verification,
timing of the input and both baselines, profile), variants (candidates of
rounds >= 1; in brackets those cut after a quick timing slower than the best,
strategy_config.cut_slower_pct), s/variant (round time over its candidates,
median over rounds), verify s and timing s (per variant not cut, median; cut s:
a cut variant's verification), compared (variants timed again
against the best, interleaved; in brackets those the two stored timings
settled without it) and compare s (median, in the worker), end s
(from the last round to the run's end: the acceptance gate, the final
profile, the report) and gate s (the acceptance gates' own time within it;
the final profile, staged beside the gate, takes most of the rest), Triton s (the median seconds Triton's compiler took in
a variant's runner during its verification, and how many variants found
every kernel in the cache: compiled ahead or before), quick/full (for the
variants verified after a quick timing and timed in full: the median, least
and greatest ratio of the quick timing's median to the full timing's), then
the largest verification and timing phases (median seconds per variant, in
the worker).
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import statistics
import sys
from typing import Any, Dict, List


def _time(s: str) -> float:
    s = s.rstrip("Z")
    if "." in s:
        head, frac = s.split(".", 1)
        s = head + "." + frac[:6]
    return dt.datetime.fromisoformat(s).replace(tzinfo=dt.timezone.utc).timestamp()


def _median(xs: List[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def problem_phases(run_dir: str) -> Dict[str, Any]:
    events = []
    path = os.path.join(run_dir, "events.jsonl")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            events = [json.loads(line) for line in f if line.strip()]
    starts: Dict[int, float] = {}
    slots: Dict[int, int] = {}
    rounds: Dict[int, float] = {}
    last_round = end = 0.0
    for e in events:
        if e.get("event") == "round_started":
            starts[e["round"]] = _time(e["time"])
            slots[e["round"]] = int(e.get("slots") or 0)
        elif e.get("event") == "round_finished" and e.get("round") in starts:
            rounds[e["round"]] = _time(e["time"]) - starts[e["round"]]
            last_round = _time(e["time"])
        elif e.get("event") == "run_finished":
            end = _time(e["time"])
    per_variant = [rounds[r] / slots[r] for r in rounds if r > 0 and slots.get(r)]
    verify_s: List[float] = []
    timing_s: List[float] = []
    compare_s: List[float] = []
    settled = 0
    compile_s: List[float] = []
    all_cached = 0
    vphases: Dict[str, List[float]] = {}
    tphases: Dict[str, List[float]] = {}
    tparts: Dict[str, List[float]] = {}
    variants = 0
    cut_s: List[float] = []
    quick: List[float] = []
    gate_s = 0.0
    for cand in sorted(glob.glob(os.path.join(run_dir, "round*", "cand*"))):
        apath = os.path.join(cand, "acceptance.json")
        if os.path.exists(apath):
            with open(apath, encoding="utf-8") as f:
                gate_s += (json.load(f).get("duration_ns") or 0) / 1e9
        if os.path.basename(os.path.dirname(cand)) == "round000":
            continue
        variants += 1
        vpath, tpath = os.path.join(cand, "verdict.json"), os.path.join(cand, "timing.json")
        q = 0.0  # the quick timing's median, where the verification ran one
        if os.path.exists(vpath):
            with open(vpath, encoding="utf-8") as f:
                v = json.load(f)
            if v.get("failure") == "slower":
                # Cut after its quick timing: neither verified nor timed.
                cut_s.append((v.get("duration_ns") or 0) / 1e9)
                continue
            verify_s.append((v.get("duration_ns") or 0) / 1e9)
            q = float(v.get("quick_ms") or 0.0)
            tc = v.get("triton_compiles") or {}
            if tc:
                compile_s.append(float(tc.get("seconds") or 0.0))
                all_cached += int(tc.get("compiled") or 0) == 0 and int(tc.get("cache_hits") or 0) > 0
            for k, x in (v.get("phases") or {}).items():
                vphases.setdefault(k, []).append(float(x))
        if os.path.exists(tpath):
            with open(tpath, encoding="utf-8") as f:
                t = json.load(f)
            ph = t.get("phases") or {}
            timing_s.append(sum(float(x) for x in ph.values()))
            full = t.get("median_ms") or 0
            if q > 0 and full > 0 and not t.get("budget"):
                quick.append(q / full)
            for k, x in ph.items():
                tphases.setdefault(k, []).append(float(x))
            for k, x in (t.get("timed_parts") or {}).items():
                tparts.setdefault(k, []).append(float(x))
        cpath = os.path.join(cand, "compare.json")
        if os.path.exists(cpath):
            with open(cpath, encoding="utf-8") as f:
                c = json.load(f)
            # Both sides share the interleaved timed calls; each has its own
            # prepare and checks.
            if (c.get("decision") or {}).get("interleaved") is False:
                settled += 1  # decided by the two stored timings: nothing was timed
                continue
            a, b = (c.get("best") or {}).get("phases") or {}, (c.get("candidate") or {}).get("phases") or {}
            compare_s.append(sum(float(x) for x in a.values()) + sum(float(x) for k, x in b.items() if k != "timed"))
    return {
        "round0_s": round(rounds.get(0, 0.0), 2),
        "variants": variants,
        "cut": len(cut_s),
        "cut_s": round(_median(cut_s), 3),
        "quick_vs_full": ({"n": len(quick), "median": round(_median(quick), 4), "min": round(min(quick), 4),
                           "max": round(max(quick), 4)} if quick else None),
        "s_per_variant": round(_median(per_variant), 3),
        "verify_s": round(_median(verify_s), 3),
        "timing_s": round(_median(timing_s), 3),
        "compared": len(compare_s),
        "settled": settled,
        "compare_s": round(_median(compare_s), 3),
        "end_s": round(end - last_round, 2) if end and last_round else 0.0,
        "gate_s": round(gate_s, 2),
        "triton_compile_s": round(_median(compile_s), 3) if compile_s else None,
        "all_cached": all_cached,
        "verify_phases": {k: round(_median(v), 3) for k, v in sorted(vphases.items())},
        "timing_phases": {k: round(_median(v), 3) for k, v in sorted(tphases.items())},
        "timed_parts": {k: round(_median(v), 3) for k, v in sorted(tparts.items())},
    }


def _ratios(q: Any) -> str:
    """quick/full as "median (least-greatest, n)", or "" without any."""
    if not q:
        return ""
    return f"{q['median']:.3f} ({q['min']:.3f}-{q['max']:.3f}, {q['n']})"


def _top(phases: Dict[str, float], n: int = 3) -> str:
    items = sorted(phases.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {v:.2f}" for k, v in items if v > 0)


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: kernelbench_phases.py SWEEP_DIR", file=sys.stderr)
        return 2
    sweep = argv[1]
    with open(os.path.join(sweep, "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    rows = []
    for r in results.get("results") or []:
        run_dir = os.path.join(sweep, "runs", str(r.get("run_id") or ""))
        row = {"id": r.get("id"), "name": r.get("name"), "status": r.get("status"),
               "wall_s": round(float(r.get("wall_seconds") or 0.0), 2),
               "kernel_ms": (r.get("kernel") or {}).get("median_ms"),
               "kernel_clock": (r.get("kernel") or {}).get("clock"),
               "compile_ms": (r.get("compile") or {}).get("median_ms"),
               "eager_ms": (r.get("eager") or {}).get("median_ms")}
        if os.path.isdir(run_dir):
            row.update(problem_phases(run_dir))
        rows.append(row)
    walls = [x["wall_s"] for x in rows if x["wall_s"] > 0]
    summary = {"problems": len(rows), "median_wall_s": round(_median(walls), 2),
               "median_s_per_variant": round(_median([x.get("s_per_variant", 0) for x in rows if x.get("variants")]), 3)}
    lines = ["| id | problem | wall s | round 0 s | variants (cut) | s/variant | verify s | timing s | cut s | compared | "
             "compare s | end s | gate s | Triton s (cached) | kernel ms | quick/full | largest verify phases (s) | "
             "timing phases (s) |",
             "|--:|---|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|---|--:|---|---|---|"]
    for x in rows:
        kms = f"{x['kernel_ms']:.4g}" if isinstance(x.get("kernel_ms"), (int, float)) else "n/a"
        tcs = "n/a" if x.get("triton_compile_s") is None else f"{x['triton_compile_s']:.2f} ({x.get('all_cached', 0)})"
        lines.append(f"| {x['id']} | {x['name']} | {x['wall_s']:.1f} | {x.get('round0_s', 0):.1f} | "
                     f"{x.get('variants', 0)} ({x.get('cut', 0)}) | "
                     f"{x.get('s_per_variant', 0):.2f} | {x.get('verify_s', 0):.2f} | {x.get('timing_s', 0):.2f} | "
                     f"{x.get('cut_s', 0):.2f} | "
                     f"{x.get('compared', 0)} ({x.get('settled', 0)}) | {x.get('compare_s', 0):.2f} | {x.get('end_s', 0):.1f} | "
                     f"{x.get('gate_s', 0):.2f} | {tcs} | {kms} | {_ratios(x.get('quick_vs_full'))} | "
                     f"{_top(x.get('verify_phases') or {})} | {_top(x.get('timing_phases') or {}, 4)} |")
    lines.append("")
    lines.append(f"{summary['problems']} problems; median wall {summary['median_wall_s']:.1f} s per problem; "
                 f"median {summary['median_s_per_variant']:.2f} s per variant.")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(sweep, "phases.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(sweep, "phases.json"), "w", encoding="utf-8") as f:
        json.dump({"summary": summary, "problems": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
