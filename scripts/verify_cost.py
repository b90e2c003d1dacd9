#!/usr/bin/env python3
"""Where one candidate's verification and timing go, function by function.

    python3 scripts/verify_cost.py PROBLEM KERNEL [--n 4] [--top 30] [--json FILE]

Runs the judge in this process (kagent_harness.worker.Worker, runners from
an unsandboxed fork server) on PROBLEM (a KernelBench-style problem.py),
then verifies and times N copies of KERNEL, each with a different comment so
that every copy is a new candidate with its own runner, as a tune variant
is. The first copy warms up; the others run under cProfile. It prints each
copy's verify and bench wall time with the verdict's phases, the runner
requests as the judge waited for them (start, close and each op, wrapped
before the judge's guard takes its baseline: a profiler hook would be
reported as tampering) and the same ops as the runner spent them
(KAGENT_TRACE): the difference is the link, the rest of a phase is
the judge's own work.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "harness"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_summary import RUNNER  # noqa: E402 - the runners' trace lines, as the summary reads them


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("kernel")
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    os.environ["KAGENT_TRACE"] = "1"
    trace_r, trace_w = os.pipe()
    os.set_blocking(trace_r, False)
    saved_err = os.dup(2)
    from kagent_harness import worker as kw

    kind = kw.prepare("")
    from kagent_harness import remote
    from kagent_harness.device import Device

    waited: Dict[str, float] = {}
    _wrap(remote.RunnerClient, "request", waited, lambda args: str(args[1]))
    _wrap(remote.RunnerClient, "__init__", waited, lambda args: "(start)")
    _wrap(remote.RunnerClient, "close", waited, lambda args: "(close)")

    w = kw.Worker(None, Device(kind))
    t0 = time.monotonic()
    info = w.load_problem({"problem_path": os.path.abspath(a.problem), "seeds": [5, 6, 424242]})
    print(f"load_problem {time.monotonic() - t0:.3f} s on {kind}")
    src = open(a.kernel).read()
    folder = tempfile.mkdtemp(prefix="verify-cost-")
    rows: List[Dict[str, Any]] = []
    traces: List[str] = []
    for i in range(a.n):
        path = os.path.join(folder, f"kernel_{i}.py")
        with open(path, "w") as f:
            f.write(f"# copy {i}\n" + src)
        req = {"problem_id": info["problem_id"], "candidate_path": path, "require_triton": kind == "cuda",
               "check_launch": kind == "cuda"}
        os.dup2(trace_w, 2)  # the runners inherit fd 2: their trace lines
        try:
            waited.clear()
            t = time.monotonic()
            v = w.verify(req)
            tv = time.monotonic() - t
            wv = dict(waited)
            waited.clear()
            t = time.monotonic()
            b = w.bench(dict(req, target="kernel", warmup_ms=25, rep_ms=100))
            tb = time.monotonic() - t
            wb = dict(waited)
        finally:
            os.dup2(saved_err, 2)
        lines = _drain(trace_r)
        traces.append(lines)
        ops: Dict[str, float] = {}
        for m in RUNNER.finditer(lines):
            k = m.group(1) or m.group(2)
            ops[k] = ops.get(k, 0.0) + float(m.group(3))
        rows.append({"copy": i, "verify_s": round(tv, 4), "bench_s": round(tb, 4), "passed": v.get("passed"),
                     "failure": v.get("failure"), "verify_phases": v.get("phases"),
                     "bench_phases": b.get("phases"), "runner_ops_s": {k: round(x, 4) for k, x in ops.items()},
                     "judge_waited_verify_s": _r(wv), "judge_waited_bench_s": _r(wb)})
        print(f"copy {i}: verify {tv:.3f} s (passed {v.get('passed')} {v.get('failure') or ''}), bench {tb:.3f} s")
        print(f"  verify phases {json.dumps(v.get('phases'))}")
        print(f"  bench phases  {json.dumps(b.get('phases'))} {json.dumps(b.get('timed_parts'))}")
        print(f"  runner ops    {json.dumps(rows[-1]['runner_ops_s'])}")
        print(f"  judge waited  verify {json.dumps(_r(wv))}")
        print(f"  judge waited  bench  {json.dumps(_r(wb))}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


def _r(d: Dict[str, float]) -> Dict[str, float]:
    return {k: round(v, 4) for k, v in sorted(d.items(), key=lambda kv: -kv[1])}


def _wrap(cls: Any, name: str, acc: Dict[str, float], label: Any) -> None:
    """Add each call's wall time of cls.name to acc[label(args)]."""
    inner = getattr(cls, name)

    def timed(*args: Any, **kw: Any) -> Any:
        t = time.monotonic()
        try:
            return inner(*args, **kw)
        finally:
            k = label(args)
            acc[k] = acc.get(k, 0.0) + time.monotonic() - t

    setattr(cls, name, timed)


def _drain(fd: int) -> str:
    chunks = []
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks).decode("utf-8", "replace")


if __name__ == "__main__":
    sys.exit(main())
