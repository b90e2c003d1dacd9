"""Checks that need a GPU (skipped without one) or Triton (skipped without it).

Run on a GPU machine:
    KAGENT_SUITE_PLATFORM=cuda python3 -m unittest discover -s harness/tests -t harness
"""

from __future__ import annotations

import importlib.util
import os
import unittest
from typing import Any, Callable

import torch

from tests.worker_client import TESTDATA_DIR, WorkerClient

HAS_CUDA = torch.cuda.is_available()
HAS_TRITON = importlib.util.find_spec("triton") is not None
SEEDS = [5, 6, 424242]


def _problem(name: str) -> str:
    return os.path.join(TESTDATA_DIR, "problems", name, "problem.py")


def _cand(platform: str, name: str) -> str:
    return os.path.join(TESTDATA_DIR, "candidates", platform, name + ".py")


def _load_and_verify(test: unittest.TestCase, client: WorkerClient) -> tuple:
    """add_relu loaded and its correct cuda kernel verified: (problem id,
    the kernel's path, the verdict)."""
    load = client.request("load_problem", problem_path=_problem("add_relu"), seeds=SEEDS)
    test.assertTrue(load["ok"], load)
    pid = load["result"]["problem_id"]
    good = _cand("cuda", "add_relu_ok")
    v = client.request("verify", problem_id=pid, candidate_path=good, require_triton=True)
    test.assertTrue(v["result"]["passed"], v)
    return pid, good, v


def _both_ways(compute: Callable[[str], Any]) -> dict:
    """compute(way) with the judge's fused reductions off ("0") and on ("1")."""
    from unittest import mock

    got = {}
    for way in ("0", "1"):
        with mock.patch.dict(os.environ, {"KAGENT_FUSED": way}):
            got[way] = compute(way)
    return got


@unittest.skipUnless(HAS_CUDA, "no GPU")
class GPUTimingTest(unittest.TestCase):
    """In-process timing on the GPU: host check and recheck."""

    def setUp(self) -> None:
        from kagent_harness import bracket
        from kagent_harness.device import Device
        from kagent_harness.guard import Guard
        from kagent_harness.loading import load_problem
        from kagent_harness.timing import flush_bytes

        self.device = Device("cuda")
        bracket.measure_reference(self.device, flush_bytes(self.device))  # as the worker does when it loads a problem
        self.problem = load_problem({"problem_path": _problem("add_relu"), "seeds": SEEDS, "shapes": []}, self.device, "g1")
        self.guard = Guard()

    def test_eager_passes_host_check(self) -> None:
        from kagent_harness import bracket
        from kagent_harness.timing import BenchParams, Target, bench

        self.assertGreater(self.device.reference_bracket_ms, 0.0)
        self.assertLess(self.device.reference_bracket_ms, bracket.MAX_MS)
        stats = bench(self.problem, Target("eager", self.problem.model, False), BenchParams(rep_ms=20, warmup_ms=5), self.guard)
        self.assertTrue(stats["representative"])
        self.assertTrue(stats["host_check"]["passed"], stats["host_check"])
        self.assertGreater(stats["median_ms"], 0)
        # The events' own span is measured and subtracted (a few us at most).
        self.assertEqual(stats["clock"], "device", stats["method"])
        self.assertGreater(stats["bracket_ms"], 0.0)
        self.assertLessEqual(stats["bracket_ms"], self.device.reference_bracket_ms)
        self.assertAlmostEqual(stats["median_ms"], max(0.001, stats["event_median_ms"] - stats["bracket_ms"]), places=6)
        self.assertIn("less the events' own span", stats["method"])

    def test_side_stream_fails_host_check(self) -> None:
        from kagent_harness.timing import BenchParams, Target, bench

        side = torch.cuda.Stream()
        big = torch.randn(2048, 2048, device="cuda")
        model = self.problem.model

        def cheat(x, y):
            out = model(x, y)
            with torch.cuda.stream(side):
                for _ in range(20):
                    torch.mm(big, big)
            return out

        stats = bench(self.problem, Target("kernel", cheat, True), BenchParams(rep_ms=20, warmup_ms=5), self.guard)
        # The hold ahead of each call fills every SM, so the side stream's
        # work runs after the start event: inside the span (the time is
        # honest) or after the end event (the tail check fails the timing),
        # and the unseen-input calls count their tails as well.
        if not stats["failure"]:
            self.assertGreater(stats["median_ms"], 1.0, stats)
        else:
            self.assertIn(stats["failure"], ("host_check", "unseen_inputs"), stats)
        # Work left running after the calls cannot enlarge the span
        # subtracted from them beyond the one measured before it ran.
        self.assertLessEqual(stats.get("bracket_ms", 0.0), self.device.reference_bracket_ms)

    def test_hold_keeps_other_streams_off_the_device(self) -> None:
        from kagent_harness import hold

        self.assertTrue(self.device.holds, hold.failure() or "no hold on this GPU")
        side = torch.cuda.Stream()
        big = torch.randn(4096, 4096, device="cuda")

        def side_mm() -> float:
            s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(side):
                s0.record()
                torch.mm(big, big)
                s1.record()
            torch.cuda.synchronize()
            return s0.elapsed_time(s1)

        side_mm()
        self.device.spin(0.01)  # compiles the hold
        torch.cuda.synchronize()
        alone = min(side_mm() for _ in range(3))
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        self.device.spin(5.0)
        b.record()
        held = side_mm()
        hold_ms = a.elapsed_time(b)
        self.assertGreater(hold_ms, 4.5)
        self.assertLess(hold_ms, 6.5)
        # The mm was enqueued while the hold ran: it could start only after.
        self.assertGreater(held, alone + 3.0, (held, alone, hold_ms))

    def test_tail_of_work_left_on_another_stream(self) -> None:
        side = torch.cuda.Stream()
        big = torch.randn(4096, 4096, device="cuda")
        torch.cuda.synchronize()
        b = torch.cuda.Event(enable_timing=True)
        b.record()
        self.assertLess(self.device.tail_ms(b), 1.0)
        b = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(side):
            for _ in range(20):
                torch.mm(big, big)
        b.record()
        self.assertGreater(self.device.tail_ms(b), 1.0)

    def test_recheck_catches_call_counting(self) -> None:
        from kagent_harness.timing import BenchParams, Target, bench

        model = self.problem.model
        calls = [0]

        def cheat(x, y):
            calls[0] += 1
            if calls[0] > 20:
                return torch.zeros_like(x)
            return model(x, y)

        stats = bench(self.problem, Target("kernel", cheat, True), BenchParams(rep_ms=20, warmup_ms=1, min_reps=50), self.guard)
        self.assertEqual(stats["failure"], "recheck", stats["recheck"])
        self.assertFalse(stats["recheck"]["passed"])


    def test_allocated_bytes_ignores_replaced_python_stats(self) -> None:
        # The leak check's figure, with torch's Python functions around the
        # allocator's statistics replaced as a candidate could replace them.
        from unittest import mock

        from kagent_harness.device import Device

        dev = Device("cuda")
        kept = torch.empty(64 << 20, dtype=torch.uint8, device=dev.torch_device)
        want = torch.cuda.memory_allocated(dev.torch_device)
        with mock.patch.object(torch.cuda.memory, "memory_stats", lambda *a, **k: {}), \
                mock.patch.object(torch.cuda, "memory_allocated", lambda *a, **k: 0):
            self.assertEqual(dev.allocated_bytes(), want)
        self.assertGreaterEqual(want, 64 << 20)
        del kept

    def test_leak_fails_the_timing(self) -> None:
        from kagent_harness.timing import BenchParams, Target, bench

        model = self.problem.model
        kept = []

        def leaky(x, y):
            kept.append(torch.empty(4 << 20, dtype=torch.uint8, device=x.device))
            return model(x, y)

        params = BenchParams(rep_ms=20, warmup_ms=1, min_reps=200, max_reps=200)
        stats = bench(self.problem, Target("kernel", leaky, True), params, self.guard)
        self.assertEqual(stats["failure"], "memory_leak", stats)
        self.assertIn("keeps device memory", stats["reason"])
        kept.clear()
        stats = bench(self.problem, Target("kernel", model, True), params, self.guard)
        self.assertEqual(stats["failure"], "", stats)


@unittest.skipUnless(HAS_CUDA, "no GPU")
class GPUMemoryTest(unittest.TestCase):
    """PROTOCOL.md's Memory bound on the device itself: the peak of the caching
    allocator's reserved memory over load + verify + bench (in process)."""

    def test_peak_reserved_within_bound(self) -> None:
        import shutil
        import tempfile
        import textwrap

        from kagent_harness.chunks import CHUNK
        from kagent_harness.device import Device
        from kagent_harness.guard import Guard
        from kagent_harness.loading import load_problem
        from kagent_harness.timing import DEFAULT_FLUSH_BYTES, BenchParams, bench, make_target
        from kagent_harness.verify import VerifyOptions, verify
        from tests.test_memory import CANDIDATE, PROBLEM, SCRATCH

        n = 64 << 20  # 256 MiB inputs and outputs
        tmp = tempfile.mkdtemp(prefix="kagent-gpumem-")
        try:
            problem_path = os.path.join(tmp, "problem.py")
            cand_path = os.path.join(tmp, "kernel.py")
            with open(problem_path, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(PROBLEM.format(n=n)))
            with open(cand_path, "w", encoding="utf-8") as f:
                f.write(textwrap.dedent(CANDIDATE))
            device = Device("cuda")
            guard = Guard()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            base = torch.cuda.memory_reserved()
            torch.cuda.reset_peak_memory_stats()
            # tf32 allow: the precision check has its own bound (test_memory).
            problem = load_problem({"problem_path": problem_path, "seeds": SEEDS, "tf32": "allow"}, device, "mem")
            result, cand = verify(problem, cand_path, VerifyOptions(require_triton=False, check_launch=False), guard)
            self.assertTrue(result["passed"], result)
            stats = bench(problem, make_target(problem, "kernel", cand, guard), BenchParams(rep_ms=20, warmup_ms=5),
                          guard)
            self.assertEqual(stats["failure"], "", stats)
            peak = torch.cuda.max_memory_reserved() - base
            x = y = 4 * n
            flush = 2 * device.l2_bytes() or DEFAULT_FLUSH_BYTES
            # Slack for the caching allocator: freed scratch stays reserved in segments of its own sizes.
            bound = len(SEEDS) * (x + y) + 3 * (x + y) + flush + SCRATCH + 8 * CHUNK
            self.assertLessEqual(peak, bound, f"peak reserved {peak >> 20} MiB > bound {bound >> 20} MiB")
            del problem, cand
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            torch.cuda.empty_cache()


@unittest.skipUnless(HAS_CUDA and HAS_TRITON, "no GPU or no Triton")
class GPUWorkerTest(unittest.TestCase):
    """The protocol on the GPU: verify, bench of every target, compare."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.client = WorkerClient(device="cuda")
        cls.hello = cls.client.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()

    def test_hello(self) -> None:
        self.assertEqual(self.hello["device"]["type"], "cuda")
        self.assertIsNotNone(self.hello["triton"])
        self.assertGreater(self.hello["device"]["l2_bytes"], 0)

    def test_verify_bench_compare(self) -> None:
        c = self.client
        pid, good, v = _load_and_verify(self, c)
        self.assertGreaterEqual(v["result"]["launches"], 1)
        for target in ("kernel", "eager", "compile"):
            b = c.request("bench", problem_id=pid, target=target, candidate_path=good, rep_ms=20, warmup_ms=5)
            self.assertTrue(b["ok"], b)
            res = b["result"]
            if "unavailable" in res:
                continue
            self.assertTrue(res["representative"])
            self.assertTrue(res["host_check"]["passed"], res)
            # The kernel in its runner and the baselines in the judge: the
            # events' own span subtracted from each.
            self.assertGreater(res["bracket_ms"], 0.0, res["method"])
            if target == "kernel":
                self.assertTrue(res["recheck"]["passed"], res)
        cmp = c.request(
            "compare",
            problem_id=pid,
            a={"target": "eager"},
            b={"target": "kernel", "candidate_path": good},
            rep_ms=20,
            warmup_ms=5,
        )
        self.assertTrue(cmp["ok"], cmp)
        self.assertEqual(cmp["result"]["a"]["n"], cmp["result"]["b"]["n"])
        # One bracket for both sides of a comparison.
        self.assertGreater(cmp["result"]["a"]["bracket_ms"], 0.0)
        self.assertEqual(cmp["result"]["a"]["bracket_ms"], cmp["result"]["b"]["bracket_ms"])

    def test_leaking_candidate_rejected_when_timed(self) -> None:
        # Right on every draw, but each call keeps 4 MiB: verified, then
        # rejected by its timing in its runner.
        c = self.client
        pid, _, _ = _load_and_verify(self, c)
        leak = _cand("cuda", "add_relu_leak")
        v = c.request("verify", problem_id=pid, candidate_path=leak, require_triton=True)
        self.assertTrue(v["result"]["passed"], v)
        b = c.request("bench", problem_id=pid, target="kernel", candidate_path=leak, rep_ms=20, warmup_ms=5,
                      min_reps=200, max_reps=200)
        self.assertTrue(b["ok"], b)
        self.assertEqual(b["result"]["failure"], "memory_leak", b["result"])
        self.assertIn("keeps device memory", b["result"]["reason"])

    def test_quick_cut(self) -> None:
        # A cutoff no call can beat cuts the kernel as slower; one every call
        # beats leaves its verification whole, with the quick timing's median,
        # which reads about like its full timing (printed for the record).
        c = self.client
        pid, good, _ = _load_and_verify(self, c)
        v = c.request("verify", problem_id=pid, candidate_path=good, require_triton=True, cutoff_ms=1e-9)
        self.assertEqual(v["result"]["failure"], "slower", v)
        v = c.request("verify", problem_id=pid, candidate_path=good, require_triton=True, cutoff_ms=1e9)
        self.assertTrue(v["result"]["passed"], v)
        quick = v["result"]["quick_ms"]
        b = c.request("bench", problem_id=pid, target="kernel", candidate_path=good, rep_ms=20, warmup_ms=5)
        self.assertTrue(b["ok"], b)
        full = b["result"]["median_ms"]
        print(f"\nquick cut on the GPU: quick {quick * 1e3:.2f} us, full {full * 1e3:.2f} us, ratio {quick / full:.3f}")
        self.assertTrue(0.3 < quick / full < 3.0, (quick, full))


@unittest.skipUnless(HAS_CUDA and HAS_TRITON, "no GPU or no Triton")
class GPUProfilerClockTest(unittest.TestCase):
    """KAGENT_TIMING_CLOCK=profiler: the candidate (in its runner) and both
    baselines (in the judge) are timed from the profiler's device records,
    a little below their event spans; a comparison keeps one clock."""

    def test_every_target_on_the_profiler_clock(self) -> None:
        client = WorkerClient(device="cuda", env={"KAGENT_TIMING_CLOCK": "profiler"})
        try:
            client.start()
            pid, good, _ = _load_and_verify(self, client)
            for target in ("kernel", "eager", "compile"):
                b = client.request("bench", problem_id=pid, target=target, candidate_path=good, rep_ms=20, warmup_ms=5)
                self.assertTrue(b["ok"], b)
                res = b["result"]
                if "unavailable" in res:
                    continue
                self.assertEqual(res["clock"], "profiler", res["method"])
                self.assertIn("profiling interface", res["method"])
                self.assertFalse(res["failure"], res)
            cmp = client.request("compare", problem_id=pid, a={"target": "eager"},
                                 b={"target": "kernel", "candidate_path": good}, rep_ms=20, warmup_ms=5)
            self.assertTrue(cmp["ok"], cmp)
            self.assertEqual(cmp["result"]["a"]["clock"], cmp["result"]["b"]["clock"])
        finally:
            client.close()


@unittest.skipUnless(HAS_CUDA and HAS_TRITON, "no GPU or no Triton")
class GPUFusedTest(unittest.TestCase):
    """The judge's fused reductions (fused.py) compiled for the GPU give what
    torch in pieces gives, on tensors of several programs' spans."""

    def test_fused_matches_torch(self) -> None:
        from kagent_harness import checksum, fused, numerics

        n = 5 * fused.MIN_ELEMENTS + 12345
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            ref = torch.randn(n, device="cuda").to(dtype)
            out = ref.clone()
            out[[7, n // 2, n - 1]] += 1.0
            out[11] = float("nan")
            out[12] = float("inf")
            tol = numerics.tolerance_for(dtype)

            def compute(way: str) -> tuple:
                self.assertEqual(fused.usable(out, ref), way == "1")
                return (numerics._statistics(out, ref, tol)[:3], numerics._statistics(out, ref, tol)[5:],
                        numerics.compare_tensor(out, ref, tol, "o").ok,
                        int(numerics.device_violations(out, ref, lambda d: tol)),
                        checksum.tensor_checksum(out), numerics.tensor_bits_equal(out, ref),
                        numerics.tensor_bits_equal(out, out.clone()))

            got = _both_ways(compute)
            self.assertEqual(fused.failure(), "")
            self.assertEqual(got["1"], got["0"], dtype)
            self.assertEqual(got["1"][0], (1, 1, 5), dtype)

    def test_indices_past_two_to_the_31(self) -> None:
        """A tensor of more than 2^31 elements (KernelBench's 8.6 GB fp32
        tensors have them): the far element near the end is found, at its
        index, by both paths."""
        from kagent_harness import checksum, fused, numerics

        n = (1 << 31) + 7
        if torch.cuda.mem_get_info()[0] < 4 * n * 2 + (2 << 30):
            self.skipTest("not enough free device memory")
        ref = torch.randn(n, device="cuda", dtype=torch.float16)
        out = ref.clone()
        out[n - 2] += 4.0
        tol = numerics.tolerance_for(torch.float16)
        got = _both_ways(lambda _: (numerics._statistics(out, ref, tol)[:3], numerics._statistics(out, ref, tol)[5:],
                                    checksum.tensor_checksum(out), numerics.tensor_bits_equal(out, ref)))
        self.assertEqual(fused.failure(), "")
        self.assertEqual(got["1"], got["0"])
        self.assertEqual(got["1"][0], (0, 0, 1))
        self.assertEqual(got["1"][1][1], n - 2, "the largest difference's flat offset")


@unittest.skipUnless(HAS_TRITON, "triton is not importable")
class InterpreterTest(unittest.TestCase):
    """On the cpu platform with Triton importable, kernels run in the interpreter."""

    def test_triton_kernel_on_cpu(self) -> None:
        client = WorkerClient(device="cpu", env={"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""})
        try:
            hello = client.start()
            self.assertTrue(hello["interpret"])
            load = client.request("load_problem", problem_path=_problem("add_relu"), seeds=SEEDS)
            pid = load["result"]["problem_id"]
            v = client.request(
                "verify", problem_id=pid, candidate_path=_cand("cuda", "add_relu_ok"), require_triton=True,
                check_launch=True,
            )
            self.assertTrue(v["result"]["passed"], v)
            self.assertGreaterEqual(v["result"]["launches"], 1)
            v = client.request(
                "verify", problem_id=pid, candidate_path=_cand("cuda", "no_launch"), require_triton=True,
                check_launch=True,
            )
            self.assertEqual(v["result"]["failure"], "triton_launch", v)
        finally:
            client.close()


if __name__ == "__main__":
    unittest.main()
