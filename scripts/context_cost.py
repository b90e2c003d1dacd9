#!/usr/bin/env python3
"""How long a fresh process takes to make its CUDA context, under Nsight
Compute and without it, beside what kagent's other processes do at the time.

    python3 scripts/context_cost.py [--ncu ncu] [--reps 3] [--gb N]
        [--conditions none,hold,...] [--json FILE]
    python3 scripts/context_cost.py --waits 0,10,20,30 [--reps 3] [--ncu ncu]

kagent's final profile starts a process under ncu that makes its device
context while the acceptance gate's fresh worker loads the problem, or just
after the warm worker freed its copy of the problem. Its phases line reports
that context at 0.5 s on some problems and 4-9 s on others. Each condition
below runs a probe process (import torch, torch.cuda.init(), the first
allocation, which makes the context) beside a background process doing one
thing a kagent process does; the one-off actions (start, free, exit) begin
when the probe has imported torch, just before its torch.cuda.init():

- none: nothing else on the device;
- hold: another process holds GB of device memory, idle (a warm worker);
- kernels: another process runs elementwise kernels over 2 GB tensors
  without pause (a timing);
- churn: another process allocates GB in 2 GB tensors filled with random
  numbers, frees them all and starts again (a worker loading draws);
- start: a fresh process makes its context and allocates and fills GB
  (the acceptance gate's worker starting);
- free: another process frees the GB it held back to the driver
  (the warm worker unloading the problem for the profile);
- exit: another process holding GB ends (a worker replaced or closed).

Every condition runs plain and under ncu with the arguments kagent gives it
(profiler/ncu Command.Args; nothing is profiled: the probe never calls
cudaProfilerStart). It prints one row per condition and mode: the median
and range, over the repeats, of the probe's torch.cuda.init() and first
allocation, and of its whole run as seen from outside (ncu's own start-up
and end included).

--waits runs another experiment instead, on a quiet device: the probe does
Triton's once-per-process set-up after its imports and waits each of the
seconds given before CUDA's initialisation, as the profile's process started
ahead waits for its job; plain and under ncu.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

CONDITIONS = ["none", "hold", "kernels", "churn", "start", "free", "exit"]

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

CHUNK = 2 << 30  # bytes per background tensor

# kagent's ncu arguments (profiler/ncu/command.go), with one metric.
NCU_ARGS = ["--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none",
            "--target-processes", "all", "--profile-from-start", "off", "--metrics", "gpu__time_duration.sum"]


def probe() -> None:
    """The measured process: prints its phases as one JSON line. With
    CONTEXT_COST_WARM=1 it does Triton's once-per-process set-up after its
    imports, as the profile's process started ahead does; with
    CONTEXT_COST_WAIT it then waits that many seconds before CUDA's
    initialisation, as that process waits for its job."""
    t0 = time.monotonic()
    import torch
    if os.environ.get("CONTEXT_COST_WARM") == "1":
        sys.path.insert(0, os.path.join(ROOT, "harness"))
        from kagent_harness import launches
        launches.warm_driver()
    time.sleep(float(os.environ.get("CONTEXT_COST_WAIT") or 0))
    go = os.environ.get("CONTEXT_COST_GO")
    if go:
        open(go, "w").close()  # the background process's action starts now
    t1 = time.monotonic()
    torch.cuda.init()
    t2 = time.monotonic()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    t3 = time.monotonic()
    print(json.dumps({"before_init_s": t1 - t0, "init_s": t2 - t1, "context_s": t3 - t2}), flush=True)


def wait_for(path: str, proc: Optional[subprocess.Popen] = None, limit: float = 120.0) -> None:
    """Returns once path exists; exits if proc (the process that writes it)
    ended first or after limit seconds."""
    deadline = time.monotonic() + limit
    while not os.path.exists(path):
        if proc is not None and proc.poll() is not None:
            sys.exit("context_cost: the background process ended (exit %d) before writing %s" % (proc.returncode, path))
        if time.monotonic() > deadline:
            sys.exit("context_cost: %s did not appear within %.0f s" % (path, limit))
        time.sleep(0.002)


def fill(torch: Any, nbytes: int, random: bool) -> List[Any]:
    """Tensors of CHUNK bytes (float32) on the device, nbytes in all."""
    out = []
    left = nbytes // 4
    while left > 0:
        n = min(left, CHUNK // 4)
        out.append(torch.randn(n, device="cuda") if random else torch.zeros(n, device="cuda"))
        left -= n
    return out


def busy(kind: str, gb: float, ready: str, go: str) -> None:
    """The background process: sets up what its condition needs, writes
    ready, waits for go, then does its condition's action; the conditions
    that keep going run until killed."""
    import torch
    nbytes = int(gb * (1 << 30))
    held: List[Any] = []
    if kind != "start":
        torch.empty(1, device="cuda")
    if kind in ("hold", "free", "exit"):
        held = fill(torch, nbytes, random=False)
    if kind == "kernels":
        held = fill(torch, 2 * CHUNK, random=False)
    torch.cuda.synchronize()
    open(ready, "w").close()
    wait_for(go)
    if kind == "exit":
        os._exit(0)
    began = time.monotonic()
    if kind == "free":
        held.clear()
        torch.cuda.empty_cache()
        torch.cuda.synchronize()
    elif kind == "start":
        torch.empty(1, device="cuda")
        held = fill(torch, nbytes, random=True)
        torch.cuda.synchronize()
    if kind in ("free", "start"):
        with open(ready + ".done", "w") as f:
            f.write("%.6f" % (time.monotonic() - began))
    elif kind == "churn":
        while True:
            held = fill(torch, nbytes, random=True)
            torch.cuda.synchronize()
            held.clear()
            torch.cuda.empty_cache()
    elif kind == "kernels":
        a, b = held[0], held[1]
        while True:
            torch.relu(a, out=b)
            torch.cuda.synchronize()
    time.sleep(3600)


def one(cond: str, ncu: Optional[str], gb: float, tmp: str, wait: float = 0.0) -> Dict[str, Any]:
    """One probe run beside its condition's background process; wait > 0:
    the probe does Triton's set-up and waits that long before CUDA's
    initialisation."""
    ready, go = os.path.join(tmp, "ready"), os.path.join(tmp, "go")
    for p in (ready, go, ready + ".done"):
        if os.path.exists(p):
            os.remove(p)
    bg = None
    if cond != "none":
        bg = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--busy", cond, "--gb", str(gb),
                               "--ready", ready, "--go", go])
        wait_for(ready, bg)
        if cond in ("kernels", "churn"):
            open(go, "w").close()
            time.sleep(1.0)  # the action under way before the probe starts
    cmd = [sys.executable, os.path.abspath(__file__), "--probe"]
    if ncu:
        cmd = [ncu] + NCU_ARGS + ["--log-file", os.path.join(tmp, "ncu.log")] + cmd
    env = dict(os.environ)
    if wait > 0:
        env.update(CONTEXT_COST_WARM="1", CONTEXT_COST_WAIT=str(wait))
    if bg is not None and not os.path.exists(go):
        env["CONTEXT_COST_GO"] = go  # the probe writes it once torch is imported
    began = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=300, env=env)
    wall = time.monotonic() - began
    if cond in ("free", "start"):
        # How long the background's own action took (it may outlast the probe).
        wait_for(ready + ".done", bg)
        with open(ready + ".done") as f:
            row_action = float(f.read())
    if bg is not None:
        bg.kill()
        bg.wait()
    row: Dict[str, Any] = {"condition": cond, "ncu": bool(ncu), "wall_s": wall, "exit": done.returncode}
    if cond in ("free", "start"):
        row["background_action_s"] = row_action
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row.update(json.loads(line))
    if done.returncode != 0 or "context_s" not in row:
        row["stderr_tail"] = done.stderr[-400:]
    return row


def device_gb() -> float:
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    return float(out.split()[0]) / 1024


def spread(rows: List[Dict[str, Any]], key: str) -> str:
    xs = [r[key] for r in rows if key in r]
    if not xs:
        return "-"
    return "%.2f (%.2f-%.2f)" % (statistics.median(xs), min(xs), max(xs))


def waits(a: argparse.Namespace) -> int:
    """The --waits experiment: CUDA's initialisation after each wait."""
    try:
        ws = [float(w) for w in a.waits.split(",") if w.strip()]
    except ValueError:
        print("context_cost: --waits wants seconds separated by commas, not %r" % a.waits, file=sys.stderr)
        return 2
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kagent-context-") as tmp:
        for r in range(a.reps):
            for w in ws:
                for ncu in (None, a.ncu):
                    row = one("none", ncu, 0.0, tmp, wait=w or 1e-6)
                    row.update(round=r, wait_s=w)
                    rows.append(row)
                    print("round %d wait %g %-5s %s" % (r, w, "ncu" if ncu else "plain", json.dumps(row)),
                          file=sys.stderr, flush=True)
    print("The probe does Triton's set-up, waits, then CUDA's initialisation; nothing else on the device. "
          "Seconds, median (min-max) over %d repeats." % a.reps)
    print()
    print("| wait s | mode | torch.cuda.init() | first allocation (context) | failed |")
    print("|--:|---|--:|--:|--:|")
    for w in ws:
        for mode in (False, True):
            rs = [r for r in rows if r["wait_s"] == w and r["ncu"] == mode]
            failed = sum(1 for r in rs if r["exit"] != 0 or "context_s" not in r)
            print("| %g | %s | %s | %s | %d |" % (w, "ncu" if mode else "plain", spread(rs, "init_s"),
                                                 spread(rs, "context_s"), failed))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"waits": ws, "reps": a.reps, "rows": rows}, f, indent=1)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gb", type=float, default=0.0, help="GB the background process holds (default 40%% of the device)")
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--waits", help="instead of the conditions: on a quiet device, the probe does Triton's set-up and "
                    "waits each of these seconds (comma-separated) before CUDA's initialisation, as the profile's "
                    "process started ahead waits for its job")
    ap.add_argument("--json")
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--busy", help=argparse.SUPPRESS)
    ap.add_argument("--ready", help=argparse.SUPPRESS)
    ap.add_argument("--go", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.probe:
        probe()
        return 0
    if a.busy:
        busy(a.busy, a.gb, a.ready, a.go)
        return 0
    if a.waits:
        return waits(a)
    conds = [c for c in a.conditions.split(",") if c]
    bad = [c for c in conds if c not in CONDITIONS]
    if bad:
        print("context_cost: unknown condition %s (want %s)" % (",".join(bad), ",".join(CONDITIONS)), file=sys.stderr)
        return 2
    gb = a.gb or round(0.4 * device_gb(), 1)
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kagent-context-") as tmp:
        # Rounds outside, conditions inside: a drift over the run spreads
        # over every condition instead of landing on one.
        for r in range(a.reps):
            for cond in conds:
                for ncu in (None, a.ncu):
                    row = one(cond, ncu, gb, tmp)
                    row["round"] = r
                    rows.append(row)
                    print("round %d %-8s %-5s %s" % (r, cond, "ncu" if ncu else "plain",
                                                     json.dumps({k: row[k] for k in row if k not in ("condition", "ncu", "round")})),
                          file=sys.stderr, flush=True)
    print("Background processes hold %.1f GB (hold, free, exit) or fill it (churn, start). "
          "Seconds, median (min-max) over %d repeats." % (gb, a.reps))
    print()
    print("| condition | mode | torch.cuda.init() | first allocation (context) | whole process, from outside "
          "| the background's action | failed |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for cond in conds:
        for mode in (False, True):
            rs = [r for r in rows if r["condition"] == cond and r["ncu"] == mode]
            failed = sum(1 for r in rs if r["exit"] != 0 or "context_s" not in r)
            print("| %s | %s | %s | %s | %s | %s | %d |" % (
                cond, "ncu" if mode else "plain", spread(rs, "init_s"), spread(rs, "context_s"), spread(rs, "wall_s"),
                spread(rs, "background_action_s"), failed))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gb": gb, "reps": a.reps, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
