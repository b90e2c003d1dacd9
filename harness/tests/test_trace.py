"""KAGENT_TRACE=1: where a request's time went, as scripts/trace_summary.py reads it."""

from __future__ import annotations

import os
import tempfile
import unittest

from tests.helpers import load_script
from tests.worker_client import TESTDATA_DIR, WorkerClient


class TraceTest(unittest.TestCase):
    def test_verify_trace_names_the_first_call_apart(self) -> None:
        client = WorkerClient(device="cpu", env={"KAGENT_TRACE": "1"})
        try:
            client.start()
            load = client.request("load_problem", problem_path=os.path.join(TESTDATA_DIR, "problems", "add_relu", "problem.py"),
                                  seeds=[1, 2, 31337])
            self.assertTrue(load["ok"], load)
            cand = os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py")
            v = client.request("verify", problem_id=load["result"]["problem_id"], candidate_path=cand,
                               require_triton=False)
            self.assertTrue(v["ok"] and v["result"]["passed"], v)
            log = client.wait_stderr_text("trace op verify ")
        finally:
            client.close()
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


if __name__ == "__main__":
    unittest.main()
