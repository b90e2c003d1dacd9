"""The compile baseline's objects out of the judge's full collections
(longlived.py): frozen only when no candidate's objects are alive, given
back and freed at unload; a candidate verified afterwards is still
collected. Each case runs a judge in a process of its own, as the fork
server starts one (imports frozen), and counts objects, never times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import unittest

from tests.worker_client import TESTDATA_DIR

HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import gc, json, os, sys, weakref
    from kagent_harness import worker as kw
    from kagent_harness.device import Device

    problem_path, kernel, order = sys.argv[1], sys.argv[2], sys.argv[3]
    kind = kw.prepare("cpu")
    gc.freeze()  # as the fork server does before it forks a judge
    w = kw.Worker(None, Device(kind))
    out = {"imports_frozen": gc.get_freeze_count()}
    pid = w.load_problem({"problem_path": problem_path, "seeds": [5, 6, 424242]})["problem_id"]
    problem = w.problems[pid]
    draw = weakref.ref(problem.draws[0].inputs[0])
    w.bench({"problem_id": pid, "target": "eager", "warmup_ms": 1, "rep_ms": 2})

    def verify():
        r = w.verify({"problem_id": pid, "candidate_path": kernel, "require_triton": False})
        assert r["passed"], r
        return weakref.ref(next(iter(w.candidates.values())))

    if order == "verify-first":
        verify()
    w.bench({"problem_id": pid, "target": "compile", "warmup_ms": 1, "rep_ms": 2})
    compiled = weakref.ref(problem.compiled)
    out["tracked_after_compile"] = len(gc.get_objects())
    out["frozen_after_compile"] = gc.get_freeze_count()
    if order == "compile-first":
        cand = verify()
        w._drop(next(iter(w.candidates)))
        gc.collect()
        out["dropped_candidate_freed"] = cand() is None
    del problem
    w.unload_problem({"problem_id": pid})
    out["compiled_freed"] = compiled() is None
    out["draw_freed"] = draw() is None
    out["tracked_after_unload"] = len(gc.get_objects())
    out["frozen_after_unload"] = gc.get_freeze_count()
    print(json.dumps(out))
""")


def _run(order: str, freeze: str = "") -> dict:
    env = dict(os.environ, PYTHONPATH=HARNESS, TRITON_INTERPRET="1", KAGENT_DEVICE="cpu",
               KAGENT_FREEZE_BASELINE=freeze)
    problem = os.path.join(TESTDATA_DIR, "problems", "add_relu", "problem.py")
    kernel = os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py")
    out = subprocess.run([sys.executable, "-c", SCRIPT, problem, kernel, order], capture_output=True, text=True,
                         env=env, timeout=600)
    if out.returncode != 0:
        raise AssertionError(out.stderr[-4000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


class FreezeBaselineTest(unittest.TestCase):
    def test_frozen_when_idle_collected_after_unload(self) -> None:
        r = _run("compile-first")
        # The compiled baseline's objects (about 112,000 on the CPU) are out
        # of the collector's sight...
        self.assertGreater(r["frozen_after_compile"], r["imports_frozen"] + 20000, r)
        self.assertLess(r["tracked_after_compile"], 20000, r)
        # ...a candidate that comes later is still collected...
        self.assertTrue(r["dropped_candidate_freed"], r)
        # ...and unloading frees the problem and its compiled baseline, and
        # puts the imports out of sight again.
        self.assertTrue(r["compiled_freed"] and r["draw_freed"], r)
        self.assertLess(r["tracked_after_unload"], 20000, r)
        self.assertGreaterEqual(r["frozen_after_unload"], r["imports_frozen"], r)
        self.assertLess(r["frozen_after_unload"], r["frozen_after_compile"], r)

    def test_not_frozen_with_a_candidate_alive(self) -> None:
        r = _run("verify-first")
        self.assertLess(r["frozen_after_compile"], r["imports_frozen"] + 1000, r)
        self.assertGreater(r["tracked_after_compile"], 20000, r)
        self.assertTrue(r["compiled_freed"] and r["draw_freed"], r)

    def test_off(self) -> None:
        r = _run("compile-first", freeze="0")
        self.assertLess(r["frozen_after_compile"], r["imports_frozen"] + 1000, r)
        self.assertTrue(r["compiled_freed"] and r["draw_freed"], r)


if __name__ == "__main__":
    unittest.main()
