"""The quick cut (quickcut.py): a verification with a cutoff stops after a
quick timing slower than it, and goes on as without one otherwise."""

from __future__ import annotations

import math
import os
import unittest
from typing import Any, Dict, List

from kagent_harness import quickcut as qc
from kagent_harness.failures import CheckFailure
from kagent_harness.verify import VerifyOptions, verify
from tests.helpers import TempFilesCase
from tests.worker_client import TESTDATA_DIR, WorkerClient

GOOD = """
import torch

def kernel_function(x, y):
    s = x + y
    return s * (s > 0).to(s.dtype)
"""

WRONG = """
import torch

def kernel_function(x, y):
    return x + y
"""

RAISES = """
import torch

def kernel_function(x, y):
    raise ValueError("no kernel here")
"""


def cut(ms: float) -> VerifyOptions:
    return VerifyOptions(require_triton=False, check_launch=False, cutoff_ms=ms)


class DecideTest(unittest.TestCase):
    def test_rule(self) -> None:
        self.assertIsNone(qc.decide([], 1.0))
        self.assertIsNone(qc.decide([2.0] * 4, 1.0), "four calls over it are not enough")
        self.assertTrue(qc.decide([2.0] * 5, 1.0), "five over it and none under")
        self.assertIsNone(qc.decide([2.0] * 4 + [0.5], 1.0), "one under: more calls")
        self.assertTrue(qc.decide([2.0] * 8 + [0.5] * 2, 1.0), "8 of 10 over it")
        self.assertFalse(qc.decide([0.5] * 3, 1.0), "three under it settle it")
        self.assertFalse(qc.decide([2.0] * 6 + [0.5] * 3, 1.0))
        self.assertTrue(qc.decide([1.0 + 1e-9] * 5, 1.0))
        self.assertFalse(qc.decide([1.0] * 3, 1.0), "a call at the cutoff is not over it")


class FakeRC:
    """A runner client answering prepare and timed requests from a list of times."""

    def __init__(self, times: List[float]) -> None:
        self.times = list(times)
        self.ops: List[str] = []
        self.keys: List[Any] = []

    def args(self, key: Any, values: List[Any]) -> List[Any]:
        self.keys.append(key)
        return [{"slot": str(key)}]

    def request(self, op: str, payload: Dict[str, Any] = None, what: str = "") -> Dict[str, Any]:
        self.ops.append(op)
        if op == "prepare":
            return {"host_ms": 0.01, "estimate_ms": 1.0}
        return {"ms": self.times.pop(0)}


class FakeProblem:
    class main:  # noqa: N801 - stands in for a ShapeSet
        label = "main"
        draws = [type("Draw", (), {"inputs": [1, 2]})()]

    class device:  # noqa: N801 - stands in for a Device
        is_gpu = False
        can_spin = False


class QuickCutUnitTest(unittest.TestCase):
    def timed(self, times: List[float], cutoff: float) -> FakeRC:
        rc = FakeRC(times)
        cand = type("Cand", (), {"rc": rc})()
        try:
            qc.quick_cut(FakeProblem, cand, cutoff)
        except CheckFailure as f:
            rc.failure = f
        return rc

    def test_it_stops_as_soon_as_it_is_settled(self) -> None:
        fast = self.timed([0.9] * 10, 1.0)
        self.assertEqual(fast.ops, ["prepare"] + ["timed"] * 3)
        self.assertFalse(hasattr(fast, "failure"))
        slow = self.timed([1.2] * 10, 1.0)
        self.assertEqual(slow.ops, ["prepare"] + ["timed"] * 5)
        self.assertEqual(slow.failure.name, "slower")
        self.assertIn("5 of 5", slow.failure.reason)
        mixed = self.timed([1.2, 0.9, 1.2, 1.2, 0.9, 1.2, 1.2, 1.2, 1.2, 1.2], 1.0)
        self.assertEqual(mixed.ops, ["prepare"] + ["timed"] * 10, "two under it: all ten calls")
        self.assertEqual(mixed.failure.name, "slower")

    def test_it_uses_the_full_timings_first_input_set(self) -> None:
        rc = self.timed([0.9] * 3, 1.0)
        self.assertEqual(rc.keys, [("t", "main", 0)])

    def test_the_events_own_span_is_taken_off(self) -> None:
        class Held(FakeProblem):
            class device:  # noqa: N801
                is_gpu = True
                can_spin = False
                holds = True
                reference_bracket_ms = 0.0013

                @staticmethod
                def l2_bytes() -> int:
                    return 0

        # A 13 us kernel as fast as the best: its events read 14.3 us.
        rc = FakeRC([0.0143] * 10)
        qc.quick_cut(Held, type("Cand", (), {"rc": rc})(), 0.013 * 1.03)
        self.assertEqual(rc.ops, ["prepare"] + ["timed"] * 3, "not slower once the span is taken off")
        Held.device.reference_bracket_ms = 0.5  # above bracket.MAX_MS: the device was not idle
        rc = FakeRC([0.0143] * 10)
        with self.assertRaises(CheckFailure):
            qc.quick_cut(Held, type("Cand", (), {"rc": rc})(), 0.013 * 1.03)
        self.assertEqual(qc.events_span(FakeProblem.device), 0.0, "no hold, nothing taken off")

    def test_nothing_without_a_cutoff_or_a_runner(self) -> None:
        rc = FakeRC([])
        self.assertIsNone(qc.quick_cut(FakeProblem, type("Cand", (), {"rc": rc})(), 0.0))
        self.assertIsNone(qc.quick_cut(FakeProblem, object(), 1.0), "a candidate in the judge's own process")
        self.assertEqual(rc.ops, [])


class QuickCutVerifyTest(TempFilesCase):
    """Through verify(), with the candidate in its runner (CPU times)."""

    def run_verify(self, source: str, opts: VerifyOptions) -> Any:
        return verify(self.problem(), self.write(source), opts, self.guard)

    def test_slower_than_the_cutoff(self) -> None:
        result, cand = self.run_verify(GOOD, cut(1e-9))
        self.assertFalse(result["passed"])
        self.assertEqual(result["failure"], "slower", result)
        self.assertIsNone(cand)
        self.assertEqual([c["name"] for c in result["checks"]], ["static", "import", "entry", "tamper", "slower"])
        self.assertIn("not verified further", result["reason"])
        self.assertNotIn("first_draw", result["phases"], "no verification call ran")

    def test_not_slower_is_verified_in_full(self) -> None:
        result, cand = self.run_verify(GOOD, cut(1e9))
        self.assertTrue(result["passed"], result)
        self.assertIsNotNone(cand)
        self.assertIn("quick_timing", result["phases"])
        self.assertGreater(result["quick_ms"], 0.0)
        plain, _ = self.run_verify(GOOD, cut(0.0))
        self.assertTrue(plain["passed"])
        self.assertNotIn("quick_timing", plain["phases"])
        self.assertNotIn("quick_ms", plain)
        self.assertEqual([c["name"] for c in result["checks"]], [c["name"] for c in plain["checks"]])
        cand.close()

    def test_a_wrong_kernel_not_cut_keeps_its_own_failure(self) -> None:
        result, _ = self.run_verify(WRONG, cut(1e9))
        self.assertEqual(result["failure"], "correctness", result)

    def test_a_kernel_that_fails_while_timed_gets_that_failure(self) -> None:
        result, _ = self.run_verify(RAISES, cut(1e-9))
        self.assertEqual(result["failure"], "exception", result)
        self.assertIn("no kernel here", result["reason"])


class QuickCutWorkerTest(unittest.TestCase):
    def test_the_request_field(self) -> None:
        client = WorkerClient(device="cpu")
        try:
            client.start()
            load = client.request("load_problem", problem_path=os.path.join(TESTDATA_DIR, "problems", "add_relu",
                                                                            "problem.py"), seeds=[1, 2, 31337])
            self.assertTrue(load["ok"], load)
            pid = load["result"]["problem_id"]
            cand = os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py")
            v = client.request("verify", problem_id=pid, candidate_path=cand, require_triton=False, cutoff_ms=1e-9)
            self.assertTrue(v["ok"], v)
            self.assertEqual(v["result"]["failure"], "slower", v)
            for junk in (-1, "fast", math.inf, 0):
                v = client.request("verify", problem_id=pid, candidate_path=cand, require_triton=False,
                                   cutoff_ms=junk)
                self.assertTrue(v["ok"] and v["result"]["passed"], (junk, v))
                self.assertNotIn("quick_timing", v["result"]["phases"], junk)
            v = client.request("verify", problem_id=pid, candidate_path=cand, require_triton=False, cutoff_ms=1e9)
            self.assertTrue(v["ok"] and v["result"]["passed"], v)
            b = client.request("bench", problem_id=pid, target="kernel", candidate_path=cand, require_triton=False,
                               warmup_ms=1, rep_ms=5)
            self.assertTrue(b["ok"], b)
            self.assertGreater(b["result"]["median_ms"], 0)
        finally:
            client.close()

    def test_the_spare_starts_after_the_quick_timing(self) -> None:
        client = WorkerClient(device="cpu", env={"KAGENT_TRACE": "1", "KAGENT_SPARE_RUNNER": "1"})
        try:
            client.start()
            load = client.request("load_problem", problem_path=os.path.join(TESTDATA_DIR, "problems", "add_relu",
                                                                            "problem.py"), seeds=[1, 2, 31337])
            self.assertTrue(load["ok"], load)
            cand = os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py")
            v = client.request("verify", problem_id=load["result"]["problem_id"], candidate_path=cand,
                               require_triton=False, cutoff_ms=1e9)
            self.assertTrue(v["ok"] and v["result"]["passed"], v)
            log = client.wait_stderr_text("trace op verify ")
        finally:
            client.close()
        timed = log.rfind("runner: trace op timed ")
        self.assertGreater(timed, 0, log[-3000:])
        self.assertGreater(log.find("trace spare lent "), timed, "the spare started before the quick timing ended")


if __name__ == "__main__":
    unittest.main()
