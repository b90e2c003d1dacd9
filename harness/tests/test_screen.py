"""The screen op (screen.py): many knob variants of one kernel ranked in one
runner, end to end through a real worker, with real Triton kernels: on the
GPU where there is one (compiled ahead on several threads), else under the
interpreter on the CPU."""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest

import torch

from tests.worker_client import WorkerClient

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

SEEDS = [1, 2, 31337]

PROBLEM = '''import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


rows = 4
cols = 96


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

# A row softmax whose block must cover the whole row (no loop): a block below
# the row's length is wrong, which screening must see.
KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    v = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def kernel_function(x):
    y = torch.empty_like(x)
    _softmax[(x.shape[0],)](x, y, x.shape[1], BLOCK=128, num_warps=4)
    return y
'''


def _write(folder: str, name: str, source: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    return path


def _triton() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


@unittest.skipUnless(_triton(), "triton is not importable")
class ScreenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp(prefix="screen-test-")
        problem = os.path.join(cls.dir, "problem.py")
        with open(problem, "w", encoding="utf-8") as f:
            f.write(PROBLEM)
        env = {"KAGENT_COMPILE_AHEAD": "1"}  # compile_ahead is off by default
        if DEVICE == "cpu":
            env["TRITON_INTERPRET"] = "1"
        cls.client = WorkerClient(device=DEVICE, env=env)
        cls.client.start()
        load = cls.client.request("load_problem", problem_path=problem, seeds=SEEDS, atol=1e-5, rtol=1e-4)
        assert load["ok"], load
        cls.pid = load["result"]["problem_id"]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def _write(self, name: str, source: str) -> str:
        return _write(self.dir, name, source)

    def test_ranks_correct_variants_and_fails_the_rest(self) -> None:
        paths = [
            self._write("v0.py", KERNEL),
            self._write("v1.py", KERNEL.replace("BLOCK=128", "BLOCK=256").replace("num_warps=4", "num_warps=8")),
            # Too small a block: half of each row is never written.
            self._write("v2.py", KERNEL.replace("BLOCK=128", "BLOCK=32")),
            # Writes only the first row: after v0 and v1 (correct), the
            # memory it is handed may still hold their results.
            self._write("v7.py", KERNEL.replace("_softmax[(x.shape[0],)]", "_softmax[(1,)]")),
            # Raises at its call.
            self._write("v3.py", KERNEL.replace("y = torch.empty_like(x)", "y = torch.empty_like(x)\n    assert x.shape[0] < 0, 'no rows'")),
            # Refused by the static check before anything runs.
            self._write("v4.py", KERNEL.replace("return y", "return torch.softmax(x, dim=-1)")),
            # Raises at its import.
            self._write("v5.py", KERNEL.replace("def kernel_function(x):", "ROWS = 1 // 0\n\n\ndef kernel_function(x):")),
            self._write("v6.py", KERNEL.replace("num_warps=4", "num_warps=2")),
        ]
        r = self.client.request("screen", timeout=600, problem_id=self.pid, candidate_paths=paths, calls=3,
                                warmup_ms=1)
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        self.assertEqual(len(res), len(paths))
        self.assertFalse(res[3]["passed"], res[3])
        self.assertIn(res[3]["failure"], ("correctness", "unwritten_output"), res[3])
        res = res[:3] + res[4:]
        for i in (0, 1, 6):
            self.assertTrue(res[i]["passed"], (i, res[i]))
            self.assertGreater(res[i]["median_ms"], 0)
            self.assertEqual(res[i]["calls"], 3)
            self.assertEqual(len(res[i]["times_ms"]), 3)
        self.assertFalse(res[2]["passed"])
        self.assertIn(res[2]["failure"], ("correctness", "unwritten_output"), res[2])
        self.assertIn("draw 1", res[2]["reason"])
        self.assertFalse(res[3]["passed"])
        self.assertIn("no rows", res[3]["reason"])
        self.assertEqual(res[4]["failure"], "static", res[4])
        self.assertFalse(res[5]["passed"])
        self.assertEqual(res[5]["failure"], "import", res[5])
        self.assertIn("screen:", r["result"]["method"])
        # One runner screened the whole batch; on a GPU, the kernels of the
        # four variants that import were compiled ahead.
        self.assertEqual(r["result"]["phases"]["runners"], 1, r["result"])
        if DEVICE == "cuda":
            self.assertGreaterEqual(r["result"]["compiled"], 4, r["result"])
        # The worker goes on: a verification after the screen passes.
        v = self.client.request("verify", timeout=600, problem_id=self.pid, candidate_path=paths[0])
        self.assertTrue(v["ok"] and v["result"]["passed"], v)

    def test_a_variant_that_kills_its_runner_fails_alone(self) -> None:
        # The runner dies in the middle of the batch (an abort in the call):
        # the variant it ran fails as a crash, the others are screened in a
        # fresh runner.
        crash = KERNEL.replace("y = torch.empty_like(x)", "y = torch.empty_like(x)\n    faulthandler._sigsegv()").replace("import torch\n", "import faulthandler\nimport torch\n", 1)
        paths = [self._write("c0.py", KERNEL), self._write("c1.py", crash), self._write("c2.py", KERNEL.replace("num_warps=4", "num_warps=1"))]
        r = self.client.request("screen", timeout=600, problem_id=self.pid, candidate_paths=paths, calls=2, warmup_ms=1)
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        self.assertTrue(res[0]["passed"], res[0])
        self.assertFalse(res[1]["passed"], res[1])
        self.assertEqual(res[1]["failure"], "crash", res[1])
        self.assertTrue(res[2]["passed"], res[2])
        # The batch died loading; its halves were screened apart: c0 with c1
        # (died again), c0 alone, c1 alone (failed), c2.
        self.assertLessEqual(r["result"]["phases"]["runners"], 5, r["result"])

    def test_model_new_gets_the_reference_weights(self) -> None:
        # A ModelNew with parameters: each variant is built with the
        # reference's state_dict, so a correct one matches.
        from tests.worker_client import TESTDATA_DIR

        problem = os.path.join(TESTDATA_DIR, "problems", "linear", "problem.py")
        load = self.client.request("load_problem", problem_path=problem, seeds=SEEDS)
        self.assertTrue(load["ok"], load)
        ok = os.path.join(TESTDATA_DIR, "candidates", "cpu", "linear_modelnew_ok.py")
        r = self.client.request("screen", timeout=600, problem_id=load["result"]["problem_id"],
                                candidate_paths=[ok, ok], calls=2, warmup_ms=1, require_triton=False)
        self.assertTrue(r["ok"], r)
        for res in r["result"]["results"]:
            self.assertTrue(res["passed"], res)

    def test_a_variant_that_tampers_with_the_runner(self) -> None:
        # Variants share a runner: ones that patch what the timing and the
        # comparison rely on (through helpers meant to get past the static
        # check) fail, and the honest variants around them are screened as
        # usual, not through a patched runner.
        from tests.worker_client import TESTDATA_DIR

        cands = os.path.join(TESTDATA_DIR, "candidates", "cpu")
        problem = os.path.join(TESTDATA_DIR, "problems", "add_relu", "problem.py")
        load = self.client.request("load_problem", problem_path=problem, seeds=SEEDS)
        self.assertTrue(load["ok"], load)
        paths = [os.path.join(cands, n + ".py") for n in
                 ("add_relu_ok", "monkeypatch_perf_counter_hidden", "tensor_patch_hidden", "add_relu_modelnew_ok")]
        r = self.client.request("screen", timeout=600, problem_id=load["result"]["problem_id"],
                                candidate_paths=paths, calls=2, warmup_ms=1, require_triton=False)
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        for i in (1, 2):
            self.assertFalse(res[i]["passed"], res[i])
            self.assertIn(res[i]["failure"], ("tamper", "static"), res[i])
        for i in (0, 3):
            self.assertTrue(res[i]["passed"], res[i])
            self.assertGreater(res[i]["median_ms"], 0)
            self.assertEqual(res[i]["max_abs_err"], 0.0, res[i])

    def test_in_place_kernel_returning_none(self) -> None:
        # With allow_inplace, a kernel that writes its first input and
        # returns None is compared through that input.
        problem = self._write("inplace_problem.py", PROBLEM.replace("torch.softmax(x, dim=-1)", "torch.relu(x)"))
        load = self.client.request("load_problem", problem_path=problem, seeds=SEEDS, allow_inplace=True)
        self.assertTrue(load["ok"], load)
        good = self._write("inplace_ok.py", "import torch\n\n\ndef kernel_function(x):\n    x.clamp_min_(0.0)\n")
        bad = self._write("inplace_bad.py", "import torch\n\n\ndef kernel_function(x):\n    x.clamp_min_(1.0)\n")
        r = self.client.request("screen", timeout=600, problem_id=load["result"]["problem_id"],
                                candidate_paths=[good, bad], calls=2, warmup_ms=1, require_triton=False)
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        self.assertTrue(res[0]["passed"], res[0])
        self.assertFalse(res[1]["passed"], res[1])

    def test_held_out_shapes_are_checked_and_timed(self) -> None:
        # Screened at the held-out shapes (held_out "only"), a variant right
        # at the timed shape but wrong at a held-out one (its block covers 96
        # columns, not 300) fails as extra_shapes; a right one is timed there.
        load = self.client.request("load_problem", problem_path=os.path.join(self.dir, "problem.py"), seeds=SEEDS,
                                   atol=1e-5, rtol=1e-4, shapes=[{"rows": 3, "cols": 300}])
        self.assertTrue(load["ok"], load)
        paths = [self._write("s0.py", KERNEL),
                 self._write("s1.py", KERNEL.replace("BLOCK=128", "BLOCK=512")),
                 # Wrong at every shape but the timed one's row length.
                 self._write("s2.py", KERNEL.replace("x.shape[1], BLOCK=128", "96, BLOCK=128"))]
        r = self.client.request("screen", timeout=600, problem_id=load["result"]["problem_id"],
                                candidate_paths=paths, calls=4, warmup_ms=1, held_out="only")
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        for i in (0, 2):
            self.assertFalse(res[i]["passed"], res[i])
            self.assertEqual(res[i]["failure"], "extra_shapes", res[i])
            self.assertIn("shape ", res[i]["reason"])
        self.assertTrue(res[1]["passed"], res[1])
        self.assertEqual(len(res[1]["shapes"]), 1, res[1])
        self.assertGreater(res[1]["shapes"][0]["median_ms"], 0)
        self.assertTrue(res[1]["shapes"][0]["label"])
        self.assertIn("held-out shape", r["result"]["method"])
        self.assertEqual(r["result"]["phases"]["runners"], 1, r["result"])
        if DEVICE == "cuda":
            # Launches at both shapes were compiled ahead: s0's and s1's at
            # each shape, s2's once (its two launches specialise alike).
            self.assertGreaterEqual(r["result"]["compiled"], 5, r["result"])

    def test_a_screen_is_at_the_timed_shape_alone_by_default(self) -> None:
        # Without held_out, a problem's held-out shapes are not compiled,
        # checked or timed: each variant has its timed-shape time alone.
        load = self.client.request("load_problem", problem_path=os.path.join(self.dir, "problem.py"), seeds=SEEDS,
                                   atol=1e-5, rtol=1e-4, shapes=[{"rows": 3, "cols": 300}])
        self.assertTrue(load["ok"], load)
        paths = [self._write("c0.py", KERNEL.replace("BLOCK=128", "BLOCK=512")),
                 self._write("c1.py", KERNEL.replace("BLOCK=128", "BLOCK=1024"))]
        r = self.client.request("screen", timeout=600, problem_id=load["result"]["problem_id"],
                                candidate_paths=paths, calls=4, warmup_ms=1)
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        self.assertTrue(all(x["passed"] for x in res), res)
        for x in res:
            self.assertGreater(x["median_ms"], 0)
            self.assertNotIn("shapes", x, res)
        self.assertNotIn("held-out", r["result"]["method"])

    def test_held_out_none_and_only(self) -> None:
        # held_out "none" screens at the timed shape alone; "only" screens
        # every variant at the held-out shapes alone: a variant wrong there
        # fails as extra_shapes, a right one passes with shapes and no
        # timed-shape time.
        load = self.client.request("load_problem", problem_path=os.path.join(self.dir, "problem.py"), seeds=SEEDS,
                                   atol=1e-5, rtol=1e-4, shapes=[{"rows": 3, "cols": 300}])
        self.assertTrue(load["ok"], load)
        pid = load["result"]["problem_id"]
        paths = [self._write("n0.py", KERNEL.replace("BLOCK=128", "BLOCK=512")),
                 self._write("n1.py", KERNEL.replace("x.shape[1], BLOCK=128", "96, BLOCK=128"))]
        r = self.client.request("screen", timeout=600, problem_id=pid, candidate_paths=paths, calls=4, warmup_ms=1,
                                held_out="none")
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        self.assertTrue(res[0]["passed"], res[0])
        self.assertNotIn("shapes", res[0], res)
        self.assertNotIn("held-out", r["result"]["method"])
        r = self.client.request("screen", timeout=600, problem_id=pid, candidate_paths=paths, calls=4, warmup_ms=1,
                                held_out="only")
        self.assertTrue(r["ok"], r)
        res = r["result"]["results"]
        self.assertTrue(res[0]["passed"], res[0])
        self.assertNotIn("median_ms", res[0], res[0])
        self.assertEqual(len(res[0]["shapes"]), 1, res[0])
        self.assertGreater(res[0]["shapes"][0]["median_ms"], 0)
        self.assertFalse(res[1]["passed"], res[1])
        self.assertEqual(res[1]["failure"], "extra_shapes", res[1])
        self.assertIn("at 1 held-out shape", r["result"]["method"])
        # Without held-out shapes, "only" has nothing to screen.
        r = self.client.request("screen", timeout=600, problem_id=self.pid, candidate_paths=paths[:1], held_out="only")
        self.assertTrue(r["ok"], r)
        self.assertEqual(r["result"]["results"], [{"passed": True}], r)
        self.assertIn("has none", r["result"]["method"])
        r = self.client.request("screen", problem_id=self.pid, candidate_paths=paths[:1], held_out="some")
        self.assertFalse(r["ok"])
        self.assertEqual(r["error"]["kind"], "bad_request")
        self.assertIn("held_out", r["error"]["message"])

    def test_bad_request(self) -> None:
        r = self.client.request("screen", problem_id=self.pid, candidate_paths=["/no/such/file.py"])
        self.assertFalse(r["ok"])
        self.assertEqual(r["error"]["kind"], "bad_request")

    def test_compile_ahead(self) -> None:
        # A tune round's variants handed over before their verifications:
        # on a GPU their kernels compile at once; under the interpreter the
        # op answers at once, starting no runner. Never a verdict: the bad
        # variants are left for their verifications.
        paths = [
            self._write("a0.py", KERNEL.replace("num_warps=4", "num_warps=1")),
            self._write("a1.py", KERNEL.replace("BLOCK=128", "BLOCK=512")),
            self._write("a2.py", KERNEL.replace("return y", "return torch.softmax(x, dim=-1)")),  # static
            self._write("a3.py", KERNEL.replace("def kernel_function(x):", "ROWS = 1 // 0\n\n\ndef kernel_function(x):")),
        ]
        r = self.client.request("compile_ahead", timeout=600, problem_id=self.pid, candidate_paths=paths)
        self.assertTrue(r["ok"], r)
        res = r["result"]
        self.assertEqual(res["variants"], 4, res)
        if DEVICE == "cpu":
            self.assertEqual((res["loaded"], res["compiled"]), (0, 0), res)
            self.assertIn("interpreter", res["skipped"])
        else:
            self.assertEqual(res["loaded"], 2, res)
            self.assertGreaterEqual(res["compiled"], 2, res)
        for path, want in ((paths[1], True), (paths[3], False)):
            v = self.client.request("verify", timeout=600, problem_id=self.pid, candidate_path=path)
            self.assertTrue(v["ok"], v)
            self.assertEqual(v["result"]["passed"], want, v["result"])
        r = self.client.request("compile_ahead", problem_id=self.pid, candidate_paths=["/no/such/file.py"])
        self.assertFalse(r["ok"])
        self.assertEqual(r["error"]["kind"], "bad_request")

    def test_verdicts_carry_the_runners_compiles(self) -> None:
        # A passed verdict says what Triton's compiler did in the
        # candidate's runner: on a GPU the first verification of a source
        # compiles its kernel and a second finds it in the shared cache;
        # under the interpreter nothing compiles.
        path = self._write("k0.py", KERNEL.replace("num_warps=4", "num_warps=8"))
        first = self.client.request("verify", timeout=600, problem_id=self.pid, candidate_path=path)["result"]
        again = self.client.request("verify", timeout=600, problem_id=self.pid, candidate_path=path)["result"]
        self.assertTrue(first["passed"] and again["passed"], (first, again))
        for r in (first, again):
            c = r["triton_compiles"]
            self.assertEqual(set(c), {"compiled", "cache_hits", "seconds"}, c)
            self.assertGreaterEqual(c["seconds"], 0)
        if DEVICE == "cpu":
            self.assertEqual(first["triton_compiles"]["compiled"] + first["triton_compiles"]["cache_hits"], 0, first)
        else:
            self.assertGreaterEqual(first["triton_compiles"]["compiled"], 1, first)
            self.assertEqual(again["triton_compiles"]["compiled"], 0, again)
            self.assertGreaterEqual(again["triton_compiles"]["cache_hits"], 1, again)


class CompileCountTest(unittest.TestCase):
    def test_listener_counts_compiles_and_cache_hits(self) -> None:
        from collections import namedtuple

        from kagent_harness.ttir import compile_listener

        times = namedtuple("times", "ir_initialization lowering_stages store_results")
        stats = {"compiled": 0, "cache_hits": 0, "seconds": 0.0}
        listen = compile_listener(stats)
        listen(src=None, metadata={}, metadata_group={}, times=times(1000, [("ttir", 2000), ("ptx", 3000)], 4000),
               cache_hit=False)
        listen(src=None, metadata={}, metadata_group={}, times=times(500, [], 0), cache_hit=True)
        self.assertEqual((stats["compiled"], stats["cache_hits"]), (1, 1))
        self.assertAlmostEqual(stats["seconds"], 0.0105)

    def test_a_forged_reply_is_dropped(self) -> None:
        from kagent_harness.verify import runner_compiles

        class FakeRunner:
            closed = False

            def __init__(self, reply):
                self.reply = reply

            def request(self, op, payload=None, fds=None, what=""):
                return self.reply

        class Cand:
            def __init__(self, reply):
                self.rc = FakeRunner(reply)

        good = {"compiled": 2, "cache_hits": 1, "seconds": 0.25}
        self.assertEqual(runner_compiles(Cand(good)), good)
        for bad in ({"compiled": -1, "cache_hits": 0, "seconds": 0.1}, {"compiled": 1, "cache_hits": 0, "seconds": float("nan")},
                    {"compiled": "x", "cache_hits": 0, "seconds": 0}, {"compiled": 1}, {"compiled": 1, "cache_hits": 0, "seconds": 1e300}):
            self.assertIsNone(runner_compiles(Cand(bad)), bad)
        self.assertIsNone(runner_compiles(object()), "a candidate in the judge's own process has no runner")


@unittest.skipUnless(_triton(), "triton is not importable")
class CompileAheadTest(unittest.TestCase):
    """screen.compile_ahead in this process (the worker's op answers at once
    under the interpreter): the batch is loaded and recorded in one runner,
    the variants that cannot load are left out, and a runner that dies ends
    the batch without an exception."""

    def setUp(self) -> None:
        from kagent_harness.device import Device
        from kagent_harness.loading import load_problem

        self.dir = tempfile.mkdtemp(prefix="ahead-test-")
        problem = self._write("problem.py", PROBLEM)
        self.problem = load_problem({"problem_path": problem, "seeds": SEEDS, "atol": 1e-5, "rtol": 1e-4},
                                    Device(DEVICE), "p1")

    def tearDown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _write(self, name: str, source: str) -> str:
        return _write(self.dir, name, source)

    def test_loads_the_variants_that_load(self) -> None:
        from kagent_harness.screen import compile_ahead

        paths = [
            self._write("b0.py", KERNEL),
            self._write("b1.py", KERNEL.replace("num_warps=4", "num_warps=2")),
            self._write("b2.py", KERNEL.replace("return y", "return torch.softmax(x, dim=-1)")),  # static
            self._write("b3.py", KERNEL.replace("def kernel_function(x):", "ROWS = 1 // 0\n\n\ndef kernel_function(x):")),
        ]
        res = compile_ahead(self.problem, paths, {"require_triton": True})
        self.assertEqual((res["variants"], res["loaded"]), (4, 2), res)
        self.assertNotIn("error", res)
        if os.environ.get("TRITON_INTERPRET") == "1":
            self.assertEqual(res["compiled"], 0, res)
        else:
            self.assertGreaterEqual(res["compiled"], 2, res)
        self.assertGreater(res["phases"]["total_s"], 0)

    def test_a_runner_that_dies_ends_the_batch(self) -> None:
        from kagent_harness.screen import compile_ahead

        crash = KERNEL.replace("y = torch.empty_like(x)", "y = torch.empty_like(x)\n    faulthandler._sigsegv()").replace(
            "import torch\n", "import faulthandler\nimport torch\n", 1)
        res = compile_ahead(self.problem, [self._write("c0.py", KERNEL), self._write("c1.py", crash)], {"require_triton": True})
        self.assertIn("error", res)
        self.assertEqual(res["compiled"], 0, res)


if __name__ == "__main__":
    unittest.main()
