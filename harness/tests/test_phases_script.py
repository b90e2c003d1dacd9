"""scripts/kernelbench_phases.py on a sweep dir laid out as kagent sweep writes it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import unittest

from tests.helpers import load_script


def _write(path: str, obj) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        if isinstance(obj, list):
            f.write("".join(json.dumps(x) + "\n" for x in obj))
        else:
            json.dump(obj, f)


class PhasesScriptTest(unittest.TestCase):
    def test_rounds_variants_and_the_end(self) -> None:
        with tempfile.TemporaryDirectory() as sweep:
            _write(os.path.join(sweep, "results.json"), {"results": [
                {"id": 19, "name": "ReLU", "status": "done", "run_id": "r1", "wall_seconds": 40.0,
                 "kernel": {"median_ms": 3.0, "clock": "device"}}]})
            run = os.path.join(sweep, "runs", "r1")
            t = "2026-12-05T05:00:%02d.000Z"
            _write(os.path.join(run, "events.jsonl"), [
                {"event": "round_started", "round": 0, "slots": 1, "time": t % 0},
                {"event": "round_finished", "round": 0, "time": t % 3},
                {"event": "round_started", "round": 1, "slots": 2, "time": t % 3},
                {"event": "round_finished", "round": 1, "time": t % 6},
                {"event": "run_finished", "time": t % 11}])
            for cand, verify_ns, quick in (("cand1", 8e8, 3.03), ("cand2", 1e9, 2.97)):
                _write(os.path.join(run, "round001", cand, "verdict.json"),
                       {"duration_ns": verify_ns, "phases": {"first_draw": 0.3}, "quick_ms": quick})
                _write(os.path.join(run, "round001", cand, "timing.json"),
                       {"phases": {"timed": 0.3, "prepare": 0.1}, "median_ms": 3.0})
            _write(os.path.join(run, "round001", "cand2", "acceptance.json"), {"duration_ns": 1.8e9, "passed": True})
            _write(os.path.join(run, "round001", "cand3", "verdict.json"),
                   {"duration_ns": 2e8, "failure": "slower", "phases": {"slower": 0.1}})
            with contextlib.redirect_stdout(io.StringIO()) as out:
                self.assertEqual(load_script("kernelbench_phases").main(["kernelbench_phases.py", sweep]), 0)
            with open(os.path.join(sweep, "phases.json"), encoding="utf-8") as f:
                row = json.load(f)["problems"][0]
        self.assertEqual(row["round0_s"], 3.0)
        self.assertEqual(row["variants"], 3)
        self.assertEqual((row["cut"], row["cut_s"]), (1, 0.2), "the cut variant is counted apart")
        self.assertNotIn("slower", row["verify_phases"])
        self.assertEqual(row["quick_vs_full"], {"n": 2, "median": 1.0, "min": 0.99, "max": 1.01})
        self.assertIn("| 1.000 (0.990-1.010, 2) |", out.getvalue())
        self.assertEqual(row["s_per_variant"], 1.5)
        self.assertEqual(row["verify_s"], 0.9)
        self.assertEqual(row["timing_s"], 0.4)
        self.assertEqual(row["end_s"], 5.0)
        self.assertEqual(row["gate_s"], 1.8)
        self.assertIn("| 5.0 | 1.80 |", out.getvalue())
        self.assertIn("| 3 (1) |", out.getvalue())


class AbTableTest(unittest.TestCase):
    def test_both_sides_per_problem(self) -> None:
        row = {"id": 19, "name": "ReLU", "wall_s": 40.0, "s_per_variant": 1.4, "verify_s": 0.8, "timing_s": 0.6,
               "variants": 19, "cut": 0, "kernel_ms": 3.0}
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            _write(a, {"problems": [row]})
            _write(b, {"problems": [dict(row, wall_s=30.0, cut=11, kernel_ms=3.01)]})
            with contextlib.redirect_stdout(io.StringIO()) as out:
                self.assertEqual(load_script("ab_table").main(["ab_table.py", "off", "on", a, "--", b]), 0)
        text = out.getvalue()
        self.assertIn("| 19 | ReLU | 40.0 | 30.0 | -10.0 |", text)
        self.assertIn("| 19 (0) | 19 (11) | 3.0000 | 3.0100 |", text)


if __name__ == "__main__":
    unittest.main()
