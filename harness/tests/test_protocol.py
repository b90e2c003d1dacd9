"""The JSON-lines protocol, end to end through a real worker subprocess."""

from __future__ import annotations

import json
import math
import os
import unittest

from kagent_harness.protocol import encode, sanitize
from tests.helpers import TORCH2
from tests.worker_client import TESTDATA_DIR, WorkerClient

SEEDS = [1, 2, 31337]


def _problem(name: str) -> str:
    return os.path.join(TESTDATA_DIR, "problems", name, "problem.py")


def _cand(name: str) -> str:
    return os.path.join(TESTDATA_DIR, "candidates", "cpu", name + ".py")


class EncodingTest(unittest.TestCase):
    def test_nan_and_inf_become_null(self) -> None:
        line = encode({"id": 1, "ok": True, "result": {"a": math.nan, "b": [math.inf, 1.5], "c": (1, 2)}})
        self.assertTrue(line.endswith(b"\n"))
        self.assertEqual(line.count(b"\n"), 1)
        obj = json.loads(line)
        self.assertEqual(obj["result"], {"a": None, "b": [None, 1.5], "c": [1, 2]})

    def test_newlines_in_strings_stay_escaped(self) -> None:
        line = encode({"id": 1, "ok": False, "error": {"kind": "x", "message": "two\nlines", "fatal": False}})
        self.assertEqual(line.count(b"\n"), 1)

    def test_sanitize_unknown_objects(self) -> None:
        self.assertEqual(sanitize({"k": object}), {"k": str(object)})
        self.assertIs(sanitize(True), True)


class WorkerProtocolTest(unittest.TestCase):
    """One worker for the whole class: the handshake, every op, bad input."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.client = WorkerClient(device="cpu")
        cls.hello = cls.client.start()
        load = cls.client.request("load_problem", problem_path=_problem("add_relu"), seeds=SEEDS,
                                  shapes=[{"N": 5}])
        assert load["ok"], load
        cls.pid = load["result"]["problem_id"]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()

    def test_hello(self) -> None:
        h = self.hello
        self.assertEqual(h["device"]["type"], "cpu")
        self.assertIn("torch", h)
        self.assertIn("triton", h)
        self.assertIsInstance(h["pid"], int)
        self.assertEqual(h["protocol"], 1)

    def test_load_problem_result(self) -> None:
        load = self.client.request("load_problem", problem_path=_problem("linear"), seeds=SEEDS, dtype="bf16")
        self.assertTrue(load["ok"], load)
        r = load["result"]
        self.assertEqual(r["inputs"][0]["shape"], [8, 16])
        self.assertEqual(r["inputs"][0]["dtype"], "bfloat16")
        self.assertEqual(r["outputs"][0]["dtype"], "bfloat16")
        self.assertEqual(r["model_params"], 16 * 32 + 32)
        self.assertEqual(r["tf32"], "forbid")
        self.assertEqual(r["bytes_in"], 8 * 16 * 2)
        # FLOPs: counted with FlopCounterMode where torch has it (>= 2.1), else null with the reason.
        self.assertIn("flops", r)
        self.assertIsInstance(r["flops_note"], str)
        if r["flops"] is None:
            self.assertIn("not counted", r["flops_note"])
        else:
            self.assertEqual(r["flops"], 2 * 8 * 16 * 32)  # x @ W.T, [8, 16] x [16, 32]
        self.client.request("unload_problem", problem_id=r["problem_id"])

    def test_verify_pass_and_fail(self) -> None:
        v = self.client.request("verify", problem_id=self.pid, candidate_path=_cand("add_relu_ok"), require_triton=False)
        self.assertTrue(v["ok"], v)
        r = v["result"]
        self.assertTrue(r["passed"], r)
        names = [c["name"] for c in r["checks"]]
        for name in ("static", "import", "entry", "tamper", "correctness", "unwritten_output", "input_mutation",
                     "determinism", "triton_launch", "extra_shapes", "caching", "user_test"):
            self.assertIn(name, names)
        self.assertEqual(r["failure"], "", r.get("reason"))
        self.assertEqual(r["tf32"], "forbid")
        self.assertEqual(len(r["source_sha256"]), 64)
        v = self.client.request("verify", problem_id=self.pid, candidate_path=_cand("wrong_values"), require_triton=False)
        r = v["result"]
        self.assertFalse(r["passed"])
        self.assertEqual(r["failure"], "correctness")
        self.assertEqual(r["checks"][-1]["name"], "correctness")
        self.assertFalse(r["checks"][-1]["passed"])
        self.assertNotIn("\n", r["reason"])

    def test_verify_requires_triton_when_asked(self) -> None:
        v = self.client.request("verify", problem_id=self.pid, candidate_path=_cand("add_relu_ok"), require_triton=True)
        self.assertEqual(v["result"]["failure"], "static")
        self.assertIn("triton", v["result"]["reason"])
        # By default Triton is required exactly when it is importable.
        v = self.client.request("verify", problem_id=self.pid, candidate_path=_cand("add_relu_ok"))
        if self.hello["triton"] is None:
            self.assertTrue(v["result"]["passed"], v)
        else:
            self.assertEqual(v["result"]["failure"], "static")

    def test_bench_and_compare(self) -> None:
        good = _cand("add_relu_ok")
        b = self.client.request("bench", problem_id=self.pid, target="kernel", candidate_path=good,
                                require_triton=False, warmup_ms=2, rep_ms=10, min_reps=5, max_reps=50)
        self.assertTrue(b["ok"], b)
        r = b["result"]
        self.assertFalse(r["representative"])
        self.assertGreater(r["median_ms"], 0)
        self.assertLessEqual(r["p20_ms"], r["median_ms"])
        self.assertLessEqual(r["median_ms"], r["p80_ms"])
        self.assertTrue(5 <= r["n"] <= 50)
        self.assertEqual(len(r["times_ms"]), r["n"])
        self.assertTrue(r["recheck"]["passed"])
        self.assertEqual(r["failure"], "", r.get("reason"))
        self.assertIsNone(r["host_check"])  # cpu: no device events
        e = self.client.request("bench", problem_id=self.pid, target="eager", warmup_ms=2, rep_ms=10)
        self.assertTrue(e["ok"], e)
        self.assertIsNone(e["result"]["recheck"])
        c = self.client.request("bench", problem_id=self.pid, target="compile", warmup_ms=2, rep_ms=10)
        self.assertTrue(c["ok"], c)
        self.assertFalse(TORCH2 and "unavailable" in c["result"], c["result"])
        if "unavailable" not in c["result"]:
            self.assertGreater(c["result"]["median_ms"], 0)
        cmp = self.client.request(
            "compare", problem_id=self.pid, warmup_ms=2, rep_ms=10,
            a={"target": "eager"},
            b={"target": "kernel", "candidate_path": good, "require_triton": False},
        )
        self.assertTrue(cmp["ok"], cmp)
        r = cmp["result"]
        self.assertEqual(r["a"]["n"], r["b"]["n"])
        self.assertEqual(r["a"]["target"], "eager")
        self.assertEqual(r["b"]["target"], "kernel")
        self.assertGreater(r["b_over_a"], 0)

    def test_bench_of_a_bad_candidate_names_the_check(self) -> None:
        b = self.client.request("bench", problem_id=self.pid, target="kernel",
                                candidate_path=_cand("matmul_torch_matmul"), require_triton=False)
        self.assertFalse(b["ok"])
        self.assertEqual(b["error"]["kind"], "static")

    def test_static_check_op(self) -> None:
        s = self.client.request("static_check", candidate_path=_cand("matmul_functional_alias"), require_triton=False)
        self.assertTrue(s["ok"], s)
        self.assertFalse(s["result"]["passed"])
        self.assertIn("torch.nn.functional.linear", s["result"]["reason"])

    def test_fingerprint_op(self) -> None:
        f = self.client.request("fingerprint", candidate_path=_cand("add_relu_ok"))
        self.assertTrue(f["ok"], f)
        self.assertEqual(f["result"]["method"], "ast")
        self.assertEqual(len(f["result"]["hash"]), 64)
        # With the problem, the candidate is called once in its runner; this
        # one launches no Triton kernel (or Triton is missing): the source's.
        p = self.client.request("fingerprint", problem_id=self.pid, candidate_path=_cand("add_relu_ok"), require_triton=False)
        self.assertTrue(p["ok"], p)
        self.assertEqual(p["result"]["hash"], f["result"]["hash"])
        r = self.client.request("fingerprint", candidate_path="/no/such/kernel.py")
        self.assertEqual(r["error"]["kind"], "bad_request")

    def test_fingerprint_cannot_be_forged_by_the_candidate(self) -> None:
        # The candidate replaces the fingerprint function in its runner: the
        # static check refuses its import, so its fingerprint is its source's,
        # never the forged one; an honest candidate fingerprinted after it
        # (in a fresh runner) gets its own.
        forged = "f" * 64
        p = self.client.request("fingerprint", problem_id=self.pid, candidate_path=_cand("forge_fingerprint"), require_triton=False)
        self.assertTrue(p["ok"], p)
        self.assertNotEqual(p["result"]["hash"], forged, p)
        self.assertEqual(p["result"]["method"], "ast", p)
        self.assertIn("did not load", p["result"].get("reason", ""), p)
        h = self.client.request("fingerprint", problem_id=self.pid, candidate_path=_cand("add_relu_ok"), require_triton=False)
        self.assertTrue(h["ok"], h)
        self.assertNotEqual(h["result"]["hash"], forged, h)
        self.assertNotEqual(h["result"]["hash"], p["result"]["hash"], h)

    def test_errors(self) -> None:
        r = self.client.request("no_such_op")
        self.assertFalse(r["ok"])
        self.assertEqual(r["error"]["kind"], "bad_request")
        self.assertFalse(r["error"]["fatal"])
        r = self.client.request("verify", problem_id="p999", candidate_path=_cand("add_relu_ok"))
        self.assertEqual(r["error"]["kind"], "bad_request")
        r = self.client.request("load_problem", problem_path="/no/such/problem.py", seeds=SEEDS)
        self.assertEqual(r["error"]["kind"], "bad_request")
        r = self.client.request("load_problem", problem_path=_problem("add_relu"), seeds=[1])
        self.assertEqual(r["error"]["kind"], "bad_request")
        self.assertIn("3 seeds", r["error"]["message"])
        # A line that is not JSON gets an error reply with a null id; the worker lives on.
        self.client.send_raw(b"this is not json\n")
        reply = self.client.read_reply(30)
        self.assertIsNone(reply["id"])
        self.assertEqual(reply["error"]["kind"], "bad_request")
        self.assertTrue(self.client.request("hello")["ok"])

    def test_noisy_candidate_does_not_corrupt_the_protocol(self) -> None:
        before = self.client.stderr_bytes
        v = self.client.request("verify", problem_id=self.pid, candidate_path=_cand("fault_print_100mb"),
                                require_triton=False)
        self.assertTrue(v["ok"], v)
        self.assertTrue(v["result"]["passed"], v)
        # The reply can overtake the last of the output still in the pipe.
        self.assertGreaterEqual(self.client.wait_stderr_bytes(before + (100 << 20)) - before, 100 << 20)


class FatalTest(unittest.TestCase):
    """Fatal outcomes are error replies followed by the worker's exit."""

    def test_candidate_crash_is_not_fatal(self) -> None:
        # A candidate runs in its own process: its segfault fails it as
        # "crash" and the worker goes on serving (nothing of the worker's is
        # poisoned). The bad-device case below keeps the fatal path covered.
        client = WorkerClient(device="cpu")
        try:
            client.start()
            load = client.request("load_problem", problem_path=_problem("add_relu"), seeds=SEEDS)
            pid = load["result"]["problem_id"]
            v = client.request("verify", problem_id=pid, candidate_path=_cand("fault_segfault"), require_triton=False)
            self.assertTrue(v["ok"], v)
            self.assertEqual(v["result"]["failure"], "crash")
            self.assertIn("SIGSEGV", v["result"]["reason"])
            self.assertFalse(v["result"]["fatal"])
            good = client.request("verify", problem_id=pid, candidate_path=_cand("add_relu_ok"), require_triton=False)
            self.assertTrue(good["ok"] and good["result"]["passed"], good)
        finally:
            client.close()

    def test_shutdown_and_eof_exit_zero(self) -> None:
        client = WorkerClient(device="cpu")
        try:
            client.start()
            self.assertTrue(client.request("shutdown")["ok"])
            self.assertEqual(client.proc.wait(timeout=60), 0)
        finally:
            client.close()
        client = WorkerClient(device="cpu")
        try:
            client.start()
            assert client.proc.stdin is not None
            client.proc.stdin.close()
            self.assertEqual(client.proc.wait(timeout=60), 0)
        finally:
            client.close()

    def test_bad_device_fails_the_handshake(self) -> None:
        client = WorkerClient(device="tpu")
        try:
            reply = client.read_reply(120)
            self.assertEqual(reply["id"], 0)
            self.assertFalse(reply["ok"])
            self.assertEqual(reply["error"]["kind"], "startup")
            self.assertTrue(reply["error"]["fatal"])
        finally:
            client.close()


if __name__ == "__main__":
    unittest.main()
