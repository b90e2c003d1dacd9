"""KAGENT_TRACE=1: where a request's time went, as scripts/trace_summary.py reads it."""

from __future__ import annotations

import os
import tempfile
import unittest
from typing import Dict

from tests.helpers import load_script
from tests.worker_client import TESTDATA_DIR, WorkerClient


class TraceTest(unittest.TestCase):
    def verified_log(self, env: Dict[str, str], times: int = 1) -> str:
        """The stderr of a worker (env on top of KAGENT_TRACE=1) that verified
        a passing candidate ``times`` times."""
        client = WorkerClient(device="cpu", env=dict(env, KAGENT_TRACE="1"))
        try:
            client.start()
            load = client.request("load_problem", problem_path=os.path.join(TESTDATA_DIR, "problems", "add_relu", "problem.py"),
                                  seeds=[1, 2, 31337])
            self.assertTrue(load["ok"], load)
            cand = os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py")
            for _ in range(times):
                v = client.request("verify", problem_id=load["result"]["problem_id"], candidate_path=cand,
                                   require_triton=False)
                self.assertTrue(v["ok"] and v["result"]["passed"], v)
            return client.wait_stderr_text("trace op verify ", count=times)
        finally:
            client.close()

    def test_verify_trace_names_the_first_call_apart(self) -> None:
        log = self.verified_log({})
        for part in ("poison", "run", "out"):
            self.assertIn(f"trace op call1_{part} ", log)
            self.assertIn(f"trace op calln_{part} ", log)
        self.assertEqual(log.count("trace op call1_run "), 1, log[-4000:])
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(log)
        try:
            per = load_script("trace_summary").parse(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(len(per["verify"]), 1)
        inside = dict(per["verify"][0][1])
        for name in ("r.call1_run", "r.calln_run", "r.call"):
            self.assertIn(name, inside)
            self.assertGreater(inside[name], 0.0)

    def test_runner_context_is_read(self) -> None:
        # A GPU runner makes its device context right after its start
        # (runner.make_context): the line counts inside the request it
        # precedes, like the spare's start.
        lines = ("kagent_harness.runner: trace start 0.0500 s\n"
                 "kagent_harness.runner: trace context 0.1000 s\n"
                 "kagent_harness.runner: trace op slots 0.0100 s\n"
                 "kagent_harness: trace op verify 0.7000 s\n")
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(lines)
        try:
            per = load_script("trace_summary").parse(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(per["verify"], [(0.7, [("r.start", 0.05), ("r.context", 0.1), ("r.slots", 0.01)])])

    def test_spares_are_counted(self) -> None:
        log = self.verified_log({"KAGENT_SPARE_RUNNER": "1"}, times=2)
        self.assertEqual(log.count("trace spare lent 0 of "), 2, "host buffers are never lent ahead")
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(log + "kagent_harness: trace spare lent 4096 of 4096\n"
                    "kagent_harness: trace spare lend_failed 4096\n")
        try:
            got = load_script("trace_summary").spares(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(got, {"started": 3, "lent": 1, "lent_mean_bytes": 4096, "lend_failed": 1})


if __name__ == "__main__":
    unittest.main()
