"""KAGENT_TRACE=1: where a request's time went, as scripts/trace_summary.py reads it."""

from __future__ import annotations

import os
import tempfile
import unittest
from typing import Any, Dict

from tests.helpers import load_script
from tests.worker_client import TESTDATA_DIR, WorkerClient


def summarised(log: str, fn: str) -> Any:
    """scripts/trace_summary.py's ``fn`` (parse, spares) over a log file holding ``log``."""
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(log)
    try:
        return getattr(load_script("trace_summary"), fn)(f.name)
    finally:
        os.unlink(f.name)


class TraceTest(unittest.TestCase):
    def verified_log(self, env: Dict[str, str], times: int = 1, until: str = "", **verify: Any) -> str:
        """The stderr of a worker (env on top of KAGENT_TRACE=1) that verified
        a passing candidate ``times`` times (``verify``: more of the request),
        read once it holds ``until`` too (a line another process writes when
        it gets to it)."""
        client = WorkerClient(device="cpu", env=dict(env, KAGENT_TRACE="1"))
        try:
            client.start()
            load = client.request("load_problem", problem_path=os.path.join(TESTDATA_DIR, "problems", "add_relu", "problem.py"),
                                  seeds=[1, 2, 31337])
            self.assertTrue(load["ok"], load)
            cand = os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py")
            for _ in range(times):
                v = client.request("verify", problem_id=load["result"]["problem_id"], candidate_path=cand,
                                   require_triton=False, **verify)
                self.assertTrue(v["ok"] and v["result"]["passed"], v)
            log = client.wait_stderr_text("trace op verify ", count=times)
            return client.wait_stderr_text(until) if until else log
        finally:
            client.close()

    def test_verify_trace_names_the_first_call_apart(self) -> None:
        log = self.verified_log({})
        for part in ("poison", "run", "out"):
            self.assertIn(f"trace op call1_{part} ", log)
            self.assertIn(f"trace op calln_{part} ", log)
        self.assertEqual(log.count("trace op call1_run "), 1, log[-4000:])
        per = summarised(log, "parse")
        self.assertEqual(len(per["verify"]), 1)
        inside = dict(per["verify"][0][1])
        for name in ("r.call1_run", "r.calln_run", "r.call"):
            self.assertIn(name, inside)
            self.assertGreater(inside[name], 0.0)

    def test_runner_context_is_read(self) -> None:
        # A spare makes its device context when the judge asks (spare.py):
        # its line counts inside the request during which it was made.
        per = summarised("kagent_harness.runner: trace start 0.0500 s\n"
                         "kagent_harness.runner: trace op context 0.1000 s\n"
                         "kagent_harness.runner: trace op slots 0.0100 s\n"
                         "kagent_harness: trace op verify 0.7000 s\n", "parse")
        self.assertEqual(per["verify"], [(0.7, [("r.start", 0.05), ("r.context", 0.1), ("r.slots", 0.01)])])

    def test_spare_context_comes_after_the_quick_timing(self) -> None:
        # With a cutoff the verification times its candidate first: the
        # spare's process may start before, but its context (device work) is
        # asked for only once that timing is over, within the verification
        # (the judge's "spare lent" line says when it asked; the spare logs
        # the op when it gets to it, perhaps after the verification ended).
        # Without one, it is asked at the import, and nothing is timed.
        for cutoff in (1e6, 0.0):
            log = self.verified_log({"KAGENT_SPARE_RUNNER": "1"}, until="trace op context ", cutoff_ms=cutoff)
            lines = log.splitlines()

            def at(text: str) -> list:
                return [i for i, line in enumerate(lines) if text in line]

            self.assertEqual(len(at("trace op context ")), 1, log[-4000:])
            asked = at("kagent_harness: trace spare lent ")
            self.assertEqual(len(asked), 1, log[-4000:])
            self.assertLess(asked[0], at("kagent_harness: trace op verify ")[0],
                            "the context was not asked for during the verification")
            timed = at("trace op timed ")
            if cutoff:
                self.assertTrue(timed, "no quick timing")
                self.assertGreater(asked[0], max(timed), "the spare was asked for its context before the quick timing ended")
                self.assertGreater(at("trace op context ")[0], max(timed))
            else:
                self.assertFalse(timed, "a quick timing without a cutoff")

    def test_spares_are_counted(self) -> None:
        log = self.verified_log({"KAGENT_SPARE_RUNNER": "1"}, times=2)
        self.assertEqual(log.count("trace spare lent 0 of "), 2, "host buffers are never lent ahead")
        got = summarised(log + "kagent_harness: trace spare lent 4096 of 4096\n"
                         "kagent_harness: trace spare lend_failed 4096\n", "spares")
        self.assertEqual(got, {"started": 3, "lent": 1, "lent_mean_bytes": 4096, "lend_failed": 1})


if __name__ == "__main__":
    unittest.main()
