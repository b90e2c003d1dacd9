"""Timing on CPU: statistics, the time-based budget, rotation, recheck, compare."""

from __future__ import annotations

import os
import unittest

import torch

from kagent_harness import bracket, timing, timing_stats
from kagent_harness.timing import UNSEEN_DRAWS, BenchParams, Target, bench, compare
from tests.helpers import TORCH2, TempFilesCase

FAST = BenchParams(warmup_ms=1, rep_ms=5, min_reps=5, max_reps=200)


class StatsTest(unittest.TestCase):
    def test_percentiles(self) -> None:
        s = timing_stats._stats([5.0, 1.0, 3.0, 2.0, 4.0])
        self.assertEqual(s["median_ms"], 3.0)
        self.assertAlmostEqual(s["p20_ms"], 1.8)
        self.assertAlmostEqual(s["p80_ms"], 4.2)
        self.assertEqual(s["mean_ms"], 3.0)
        self.assertAlmostEqual(s["cv"], (2.0 ** 0.5) / 3.0)
        self.assertEqual(s["n"], 5)
        self.assertEqual(s["times_ms"], [5.0, 1.0, 3.0, 2.0, 4.0])  # in call order

    def test_single(self) -> None:
        s = timing_stats._stats([2.0])
        self.assertEqual((s["median_ms"], s["p20_ms"], s["cv"]), (2.0, 2.0, 0.0))

    def test_recheck_indices(self) -> None:
        self.assertEqual(timing_stats._recheck_indices(10, 3), set(range(10)))
        idx = timing_stats._recheck_indices(1000, 4)
        self.assertLessEqual(len(idx), timing_stats.RECHECK_SAMPLES + 4)
        for last in (996, 997, 998, 999):
            self.assertIn(last, idx)

    def test_params_from_request(self) -> None:
        p = BenchParams.from_request({"warmup_ms": 3, "rep_ms": 7, "min_reps": 20, "max_reps": 5, "rotate": False})
        self.assertEqual((p.warmup_ms, p.rep_ms, p.min_reps, p.max_reps, p.rotate), (3.0, 7.0, 20, 20, False))


class LeakReasonTest(unittest.TestCase):
    """timing_stats.leak_reason on the device memory held after each timed call."""

    MIB = 1 << 20

    def test_memory_kept_by_every_call_is_a_leak(self) -> None:
        held = [1000 * self.MIB + i * 4 * self.MIB for i in range(200)]
        reason = timing_stats.leak_reason(held)
        self.assertIn("keeps device memory", reason)
        self.assertIn("796 MiB more held after 199 more timed calls (4.0 MiB a call", reason)

    def test_a_workspace_made_once_is_not(self) -> None:
        # A buffer of 2 GiB made on the second call and kept.
        held = [100 * self.MIB] + [2148 * self.MIB] * 199
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_memory_that_comes_and_goes_is_not(self) -> None:
        held = [100 * self.MIB + (i % 2) * 900 * self.MIB for i in range(200)]
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_slow_growth_under_the_floor_is_not(self) -> None:
        held = [100 * self.MIB + i * self.MIB for i in range(200)]  # 199 MiB in all
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_memory_made_for_a_few_input_sets_late_is_not(self) -> None:
        # Ten timed calls of a slow kernel; the mirrors of input sets 3 and 4
        # (1 GiB each) made at its third and fourth calls.
        held = [2048 * self.MIB] * 2 + [3072 * self.MIB] + [4096 * self.MIB] * 7
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_outputs_kept_per_input_set_are_not(self) -> None:
        # Four input sets, an output kept for each once it was seen.
        held = [min(i + 1, 4) * 1024 * self.MIB for i in range(40)]
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_memory_kept_every_few_calls_is_a_leak(self) -> None:
        # 12 MiB kept at every third call of 200: growth at a third of them.
        held = [1000 * self.MIB + (i // 3) * 12 * self.MIB for i in range(200)]
        self.assertIn("keeps device memory", timing_stats.leak_reason(held))

    def test_a_large_leak_every_fourth_call_of_a_dozen(self) -> None:
        held = [(7 + i // 4) * 1024 * self.MIB for i in range(12)]
        self.assertIn("rose at 2 of timed calls 5-10 of 12", timing_stats.leak_reason(held))

    def test_a_leak_under_memory_that_comes_and_goes(self) -> None:
        # 600 MiB more at every other call, 8 MiB of it kept each time.
        held = [1000 * self.MIB + (i // 2) * 8 * self.MIB + (i % 2) * 600 * self.MIB for i in range(200)]
        self.assertIn("keeps device memory", timing_stats.leak_reason(held))

    def test_a_workspace_made_once_late_is_not(self) -> None:
        held = [100 * self.MIB] * 120 + [2148 * self.MIB] * 80
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_a_late_workspace_beside_small_allocations_is_not(self) -> None:
        # A 2 GiB workspace at call 120 and a few KiB kept now and then.
        held = [100 * self.MIB + (2048 * self.MIB if i >= 120 else 0) + (i // 40) * 4096 for i in range(200)]
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_outputs_kept_per_input_set_over_few_calls_are_not(self) -> None:
        # Eight timed calls; four input sets, 1 GiB kept for each once seen.
        held = [min(i + 1, 4) * 1024 * self.MIB for i in range(8)]
        self.assertEqual(timing_stats.leak_reason(held), "")

    def test_few_calls_say_nothing(self) -> None:
        self.assertEqual(timing_stats.leak_reason([0, 1 << 30, 2 << 30, 3 << 30]), "")
        self.assertEqual(timing_stats.leak_reason([]), "")

    def test_a_large_leak_over_few_calls(self) -> None:
        # 1 GiB a call over the dozen calls a large kernel is timed with.
        held = [(7 + i) * 1024 * self.MIB for i in range(12)]
        self.assertIn("1024.0 MiB a call", timing_stats.leak_reason(held))

    def test_no_device_memory_off_a_gpu(self) -> None:
        from kagent_harness.device import Device

        self.assertIsNone(Device("cpu").allocated_bytes())

    def test_the_figure_comes_from_the_binding_captured_at_import(self) -> None:
        # A candidate that replaces torch's Python functions around the
        # allocator's statistics does not change what a runner reports.
        from unittest import mock

        from kagent_harness import device as kdev

        dev = kdev.Device.__new__(kdev.Device)
        dev.type, dev.torch_device = "cuda", torch.device("cuda", 0)
        stats = {"allocated_bytes": {"all": {"current": 3 << 30}}}
        with mock.patch.object(kdev, "_cuda_memory_stats", lambda index: stats if index == 0 else {}), \
                mock.patch.object(torch.cuda, "memory_allocated", lambda *a, **k: 0):
            if hasattr(torch.cuda, "memory"):
                with mock.patch.object(torch.cuda.memory, "memory_stats", lambda *a, **k: {}):
                    self.assertEqual(dev.allocated_bytes(), 3 << 30)
            self.assertEqual(dev.allocated_bytes(), 3 << 30)


class SettleHostCheckTest(unittest.TestCase):
    """A host-check burst over its limit is timed once more: the host's clock
    reads long only by moments, while escaping work makes every burst long."""

    def bursts(self, *passed: bool):
        results = iter(passed)
        calls = []

        def burst():
            calls.append(1)
            return {"passed": next(results), "host_ms": 1.0}

        return burst, calls

    def test_a_passing_burst_is_not_repeated(self) -> None:
        burst, calls = self.bursts(True)
        out = timing_stats.settle_host_check(burst)
        self.assertEqual((out["passed"], out["attempts"], len(calls)), (True, 1, 1))

    def test_a_late_burst_is_timed_again(self) -> None:
        burst, calls = self.bursts(False, True)
        out = timing_stats.settle_host_check(burst)
        self.assertEqual((out["passed"], out["attempts"], len(calls)), (True, 2, 2))

    def test_long_every_time_fails(self) -> None:
        burst, calls = self.bursts(False, False, True)
        out = timing_stats.settle_host_check(burst)
        self.assertEqual((out["passed"], out["attempts"], len(calls)), (False, timing_stats.HOST_ATTEMPTS, timing_stats.HOST_ATTEMPTS))


class BenchTest(TempFilesCase):
    def setUp(self) -> None:
        super().setUp()
        self.problem = self.problem()

    def kernel(self, fn) -> Target:
        return Target("kernel", fn, True)

    def test_eager(self) -> None:
        s = bench(self.problem, Target("eager", self.problem.model, False), FAST, self.guard)
        self.assertFalse(s["representative"])
        self.assertTrue(FAST.min_reps <= s["n"] <= FAST.max_reps)
        self.assertLessEqual(s["p20_ms"], s["median_ms"])
        self.assertIsNone(s["recheck"])
        self.assertEqual(s["sets"], 3)
        self.assertIn("process_time", s["method"])
        self.assertEqual(s["failure"], "")
        # The host time to enqueue a call; on CPU the call runs on the host, so
        # it is at least the measured time's order.
        self.assertGreater(s["host_median_ms"], 0)
        self.assertGreaterEqual(s["host_median_ms"], 0.5 * s["median_ms"])

    def test_host_time_of_a_slow_python_path(self) -> None:
        import time as _time

        def slow(x, y):
            _time.sleep(0.002)  # host time before the work (no CPU time)
            s = x + y
            return s * (s > 0).to(s.dtype)

        s = bench(self.problem, self.kernel(slow), FAST, self.guard)
        self.assertEqual(s["failure"], "", s)
        self.assertGreaterEqual(s["host_median_ms"], 2.0)

    def test_rotation_uses_every_draw(self) -> None:
        seen = set()

        def fn(x, y):
            seen.add(float(x[0, 0]))
            s = x + y
            return s * (s > 0).to(s.dtype)

        s = bench(self.problem, self.kernel(fn), FAST, self.guard)
        self.assertEqual(s["failure"], "", s)
        self.assertEqual(len(seen), 3 + UNSEEN_DRAWS)  # the stored draws, then the unseen ones
        s = bench(self.problem, self.kernel(fn), BenchParams(warmup_ms=1, rep_ms=5, min_reps=5, rotate=False), self.guard)
        self.assertEqual(s["sets"], 1)

    def test_stored_draws_timed_in_place(self) -> None:
        stored = {d.inputs[0].data_ptr() for d in self.problem.draws}
        seen = set()

        def fn(x, y):
            seen.add(x.data_ptr())
            s = x + y
            return s * (s > 0).to(s.dtype)

        s = bench(self.problem, self.kernel(fn), FAST, self.guard)
        self.assertEqual(s["failure"], "", s)
        self.assertLessEqual(stored, seen)  # no copies
        self.assertTrue(seen - stored)  # and the unseen draws' own inputs
        self.assertIn("stored draws", s["method"])

    def test_input_mutation_while_timed_is_fatal(self) -> None:
        from kagent_harness.failures import CheckFailure
        from kagent_harness.loading import references_intact

        calls = [0]

        def fn(x, y):
            calls[0] += 1
            if calls[0] == 12:
                x.mul_(1.5)
            s = x + y
            return s * (s > 0).to(s.dtype)

        with self.assertRaises(CheckFailure) as ctx:
            bench(self.problem, self.kernel(fn), BenchParams(warmup_ms=0, rep_ms=1, min_reps=20, max_reps=20),
                  self.guard)
        self.assertEqual(ctx.exception.name, "input_mutation")
        self.assertTrue(ctx.exception.fatal)
        self.assertIn("while timed", ctx.exception.reason)
        self.assertIsNotNone(references_intact(self.problem))

    def test_mutation_then_exception_is_still_fatal(self) -> None:
        from kagent_harness.failures import CheckFailure

        def fn(x, y):
            x.zero_()
            raise RuntimeError("after writing the input")

        with self.assertRaises(CheckFailure) as ctx:
            bench(self.problem, self.kernel(fn), FAST, self.guard)
        self.assertEqual(ctx.exception.name, "input_mutation")
        self.assertTrue(ctx.exception.fatal)

    def test_in_place_targets_get_restored_copies(self) -> None:
        from kagent_harness.loading import references_intact

        problem = TempFilesCase.problem(self, allow_inplace=True)  # self.problem is the default problem
        stored = {d.inputs[0].data_ptr() for d in problem.draws}
        seen = set()

        def fn(x, y):
            seen.add(x.data_ptr())
            x.add_(y)
            x.mul_((x > 0).to(x.dtype))

        s = bench(problem, self.kernel(fn), FAST, self.guard)
        self.assertEqual(s["failure"], "", s)  # the recheck passes: each timed call starts from the draw
        self.assertIn("copies", s["method"])
        self.assertTrue(seen.isdisjoint(stored))
        self.assertIsNone(references_intact(problem))

    def test_eager_of_an_in_place_reference_gets_copies(self) -> None:
        from kagent_harness.loading import references_intact
        from tests.helpers import ADD_RELU

        problem = TempFilesCase.problem(self, ADD_RELU.replace("return torch.relu(x + y)", "return x.add_(y).relu_()"))
        self.assertTrue(problem.main.ref_mutates_inputs)
        s = bench(problem, Target("eager", problem.model, False), FAST, self.guard)
        self.assertIn("copies", s["method"])
        self.assertIsNone(references_intact(problem))

    def test_recheck_catches_late_cheat(self) -> None:
        calls = [0]

        def fn(x, y):
            calls[0] += 1
            s = x + y
            out = s * (s > 0).to(s.dtype)
            return out if calls[0] < 10 else torch.zeros_like(out)

        s = bench(self.problem, self.kernel(fn), BenchParams(warmup_ms=0, rep_ms=1, min_reps=20, max_reps=20), self.guard)
        self.assertEqual(s["failure"], "recheck")
        self.assertFalse(s["recheck"]["passed"])

    def _verified(self, fn) -> Target:
        """A kernel target carrying the checksums verification records."""
        from kagent_harness.checksum import checksum

        sums = {d.index: checksum(fn(*d.inputs)) for d in self.problem.draws}
        return Target("kernel", fn, True, sums)

    def test_recheck_holds_timed_outputs_to_the_verified_bits(self) -> None:
        # Exact while verified, then within every tolerance but not the same
        # bits (a cheaper, less precise path once timed).
        calls = [0]

        def fn(x, y):
            calls[0] += 1
            s = x + y
            out = s * (s > 0).to(s.dtype)
            return out if calls[0] <= len(self.problem.draws) else out * (1 + 2**-20)

        target = self._verified(fn)
        s = bench(self.problem, target, BenchParams(warmup_ms=0, rep_ms=1, min_reps=20, max_reps=20), self.guard)
        self.assertEqual(s["failure"], "recheck", s["recheck"])
        self.assertIn("bit for bit", s["recheck"]["reason"])

    def test_recheck_passes_an_honest_kernel_on_the_verified_bits(self) -> None:
        def fn(x, y):
            s = x + y
            return s * (s > 0).to(s.dtype)

        s = bench(self.problem, self._verified(fn), BenchParams(warmup_ms=0, rep_ms=1, min_reps=20, max_reps=20),
                  self.guard)
        self.assertEqual(s["failure"], "", s)
        self.assertTrue(s["recheck"]["passed"])

    def test_exception_while_timed(self) -> None:
        calls = [0]

        def fn(x, y):
            calls[0] += 1
            if calls[0] > 8:
                raise RuntimeError("late failure")
            return torch.relu(x + y)

        from kagent_harness.failures import CheckFailure

        with self.assertRaises(CheckFailure) as ctx:
            bench(self.problem, self.kernel(fn), BenchParams(warmup_ms=0, rep_ms=1, min_reps=20, max_reps=20), self.guard)
        self.assertEqual(ctx.exception.name, "exception")
        self.assertIn("late failure", ctx.exception.reason)

    def test_compile_unavailable_or_timed(self) -> None:
        try:
            target = timing.make_target(self.problem, "compile", None, self.guard)
        except timing.Unavailable as exc:
            self.assertFalse(TORCH2, f"torch {torch.__version__} has torch.compile, yet: {exc}")
            self.assertIn("torch.compile", str(exc))
            return
        s = bench(self.problem, target, FAST, self.guard)
        self.assertGreater(s["median_ms"], 0)

    def test_unseen_inputs_catch_reused_results(self) -> None:
        def relu(x, y):
            s = x + y
            return s * (s > 0).to(s.dtype)

        def key(x):
            return tuple(float(v) for v in x.flatten()[:4])

        cache = {}

        def cached(x, y):  # computes (slowly) once per content, then looks it up
            k = key(x)
            if k not in cache:
                sum(i * i for i in range(300_000))  # about 20 ms of CPU time
                cache[k] = relu(x, y)
            return cache[k].clone()

        s = bench(self.problem, self.kernel(cached), FAST, self.guard)
        self.assertEqual(s["failure"], "unseen_inputs", s)
        self.assertIn("reuse results", s["reason"])
        self.assertTrue(s["recheck"]["passed"])

        known = {key(d.inputs[0]): d.ref for d in self.problem.draws}

        def table(x, y):  # right on the draws it knows, zeros elsewhere
            ref = known.get(key(x))
            return ref.clone() if ref is not None else torch.zeros_like(x)

        s = bench(self.problem, self.kernel(table), FAST, self.guard)
        self.assertEqual(s["failure"], "unseen_inputs", s)
        self.assertIn("differ from the reference beyond the tolerance", s["reason"])

        s = bench(self.problem, self.kernel(relu), FAST, self.guard)
        self.assertEqual(s["failure"], "", s)
        self.assertTrue(s["unseen_inputs"]["passed"])
        self.assertEqual(len(s["unseen_inputs"]["times_ms"]), UNSEEN_DRAWS)

    def test_unseen_check_skipped_when_no_new_draw_can_be_built(self) -> None:
        def relu(x, y):
            s = x + y
            return s * (s > 0).to(s.dtype)

        def no_more_data():
            raise RuntimeError("no more data")

        saved = self.problem.module.get_inputs
        self.problem.module.get_inputs = no_more_data
        try:
            s = bench(self.problem, self.kernel(relu), FAST, self.guard)
        finally:
            self.problem.module.get_inputs = saved
        self.assertEqual(s["failure"], "", s)
        self.assertIn("building a new draw failed", s["unseen_inputs"]["skipped"])

    def test_baselines_get_no_unseen_check(self) -> None:
        s = bench(self.problem, Target("eager", self.problem.model, False), FAST, self.guard)
        self.assertIsNone(s["unseen_inputs"])

    def test_compare_interleaved(self) -> None:
        order = []

        def a(x, y):
            order.append("a")
            return torch.relu(x + y)

        def b(x, y):
            order.append("b")
            s = x + y
            return s * (s > 0).to(s.dtype)

        r = compare(self.problem, self.kernel(a), self.kernel(b), FAST, self.guard)
        self.assertEqual(r["a"]["n"], r["b"]["n"])
        n = r["a"]["n"]
        timed = order[-2 * n - 2 * UNSEEN_DRAWS:-2 * UNSEEN_DRAWS]
        self.assertEqual(timed, ["a", "b"] * n)
        self.assertEqual(order[-2 * UNSEEN_DRAWS:], ["a"] * UNSEEN_DRAWS + ["b"] * UNSEEN_DRAWS)
        self.assertEqual(r["failure"], "")


if __name__ == "__main__":
    unittest.main()


class SpinAndTailTest(unittest.TestCase):
    """The spin's growth on late calls and the tail check, as plain logic."""

    def _timer(self, spin_ms: float) -> object:
        from kagent_harness import timing

        t = timing._Timer.__new__(timing._Timer)
        t.host_times, t.late_calls, t.spin_ms, t.late = [], 0, spin_ms, []
        return t

    def test_late_calls_do_not_narrow_the_cv(self) -> None:
        # A kernel that makes its slow call late (host work before the
        # launch) gets the spread of the others as a diagnostic; the cv it is
        # reported with keeps every call.
        t = self._timer(0.05)
        times = [1.0, 1.01, 0.99, 1.0, 9.0, 1.0]
        for i in range(len(times)):
            t.note_host(0.5 if i == 4 else 0.01)
        out = timing_stats.spread(times, t.late)
        self.assertLess(out["cv_on_time"], 0.01)
        self.assertNotIn("cv", out)
        self.assertGreater(timing_stats._stats(times)["cv"], 0.5)
        self.assertEqual(timing_stats.spread(times, [False] * len(times)), {})
        self.assertEqual(timing_stats.spread(times, [True] * len(times)), {})

    def test_one_slow_call_leaves_the_spin(self) -> None:
        t = self._timer(0.05)
        for i in range(200):
            t.note_host(5.0 if i % 40 == 7 else 0.01)
        self.assertEqual(t.spin_ms, 0.05)
        self.assertEqual(t.late_calls, 5)

    def test_sustained_late_calls_grow_the_spin(self) -> None:
        from kagent_harness import timing

        t = self._timer(0.05)
        for _ in range(30):
            t.note_host(0.2)
        self.assertAlmostEqual(t.spin_ms, timing.SPIN_FACTOR * 0.2)
        for _ in range(30):
            t.note_host(0.2)
        self.assertAlmostEqual(t.spin_ms, timing.SPIN_FACTOR * 0.2)

    def test_tail_check(self) -> None:
        from kagent_harness.timing import tail_check

        self.assertIsNone(tail_check([], 1.0))
        self.assertTrue(tail_check([0.01] * 50 + [3.0] * 10, 0.02)["passed"])
        bad = tail_check([6.0] * 50, 0.01)
        self.assertFalse(bad["passed"])
        self.assertIn("outside the timed stream", bad["reason"])
        # A long kernel's own jitter is not a tail.
        self.assertTrue(tail_check([0.4] * 9, 2.0)["passed"])


class BracketTest(unittest.TestCase):
    """The events' own span: measured by the judge after the same spin and
    flush as a timed call, subtracted from every reported time."""

    class FakeCUDA:
        is_cuda = True
        is_gpu = True
        holds = True
        type = "cuda"
        torch_device = "cuda:0"

        def __init__(self, spans: list) -> None:
            self.reference_bracket_ms = None
            self.spans = list(spans)
            self.spins: list = []
            self.recorded = 0

        def spin(self, ms: float, flush: object) -> None:
            self.spins.append((ms, flush))

        def event(self) -> list:
            return []

        def record(self, e: list) -> None:
            self.recorded += 1
            e.append(self.recorded)

        def tail_ms(self, end: object) -> float:
            return 0.0

        def elapsed_ms(self, a: list, b: list) -> float:
            self.assertNothingBetween(a, b)
            return self.spans.pop(0)

        def assertNothingBetween(self, a: list, b: list) -> None:
            if b[0] != a[0] + 1:
                raise AssertionError("something was recorded between the bracket's events")

    def _timer(self, dev: object, spin_ms: float) -> object:
        t = timing._Timer.__new__(timing._Timer)
        t.dev, t.spin_ms, t.flush, t.event_times = dev, spin_ms, "flush", []
        return t

    def test_reference_measured_as_the_problem_loads(self) -> None:
        from unittest import mock

        dev = self.FakeCUDA([0.0014] * bracket.PAIRS)
        with mock.patch("torch.empty", return_value="flush"):
            bracket.measure_reference(dev, 100 << 20)
        self.assertAlmostEqual(dev.reference_bracket_ms, 0.0014)
        self.assertEqual(dev.spins, [(bracket.REFERENCE_SPIN_MS, "flush")] * bracket.PAIRS)
        # A failed measurement leaves no reference, not an old one.
        with mock.patch("torch.empty", side_effect=RuntimeError("out of memory")):
            bracket.measure_reference(dev, 100 << 20)
        self.assertIsNone(dev.reference_bracket_ms)

    def test_at_most_the_reference_measured_before_any_candidate(self) -> None:
        # Work a candidate left running lengthens every pair measured after
        # its timing; the span measured as the problem loaded bounds it.
        dev = self.FakeCUDA([0.008] * bracket.PAIRS)
        dev.reference_bracket_ms = 0.0013
        self.assertAlmostEqual(self._timer(dev, 0.25).events_bracket(), 0.0013)
        # A reference caught by something else does not raise a timing's own.
        dev = self.FakeCUDA([0.0012] * bracket.PAIRS)
        dev.reference_bracket_ms = 0.5
        self.assertAlmostEqual(self._timer(dev, 0.25).events_bracket(), 0.0012)

    def test_least_of_pairs_after_the_same_spin(self) -> None:
        # Work of another process (a candidate's, left running) can only
        # lengthen a pair: all but one pair lengthened still leaves the
        # events' own span.
        spans = [0.5] * (bracket.PAIRS - 2) + [0.0013, 0.0015]
        dev = self.FakeCUDA(spans)
        t = self._timer(dev, 0.25)
        self.assertAlmostEqual(t.events_bracket(), 0.0013)
        self.assertEqual(dev.spins, [(0.25, "flush")] * bracket.PAIRS)
        dev = self.FakeCUDA([0.0012] * bracket.PAIRS)
        self.assertAlmostEqual(self._timer(dev, 0.25).events_bracket(0.5), 0.0012)
        self.assertEqual(dev.spins[0], (0.5, "flush"))

    def test_nothing_subtracted_when_every_pair_is_long(self) -> None:
        t = self._timer(self.FakeCUDA([bracket.MAX_MS * 3] * bracket.PAIRS), 0.25)
        self.assertEqual(t.events_bracket(), 0.0)
        self.assertIn("not subtracted", t.bracket_note)

    def test_not_measured_without_a_spin_off_cuda_or_on_the_profiler_clock(self) -> None:
        self.assertEqual(self._timer(self.FakeCUDA([]), 0.0).events_bracket(), 0.0)
        t = self._timer(self.FakeCUDA([]), 0.25)
        t.event_times = [1.0]
        self.assertEqual(t.events_bracket(), 0.0)
        rocm = self.FakeCUDA([])
        rocm.holds = False  # a one-thread spin ahead (ROCm): not measured there
        self.assertEqual(self._timer(rocm, 0.25).events_bracket(), 0.0)

    def test_subtracted_down_to_the_floor(self) -> None:
        self.assertEqual(timing_stats.less_bracket([0.025, 0.03], 0.0), [0.025, 0.03])
        got = timing_stats.less_bracket([0.0253, 0.0263, 0.0015], 0.0013)
        self.assertEqual([round(x, 6) for x in got], [0.024, 0.025, timing_stats.MIN_CALL_MS])


class RemoteTimedRequestTest(unittest.TestCase):
    """A candidate in its runner cannot tell a checked timed call from an
    unchecked one: the judge asks for the output after the call returned."""

    def test_checked_and_unchecked_calls_send_the_same_request(self) -> None:
        from types import SimpleNamespace

        from kagent_harness import remote_timing, timing
        from kagent_harness.device import Device
        from kagent_harness.remote import RemoteCallable

        ref = torch.ones(4)

        class FakeRunner:
            pid = os.getpid()

            def __init__(self) -> None:
                self.requests: list = []

            def request(self, op: str, payload: dict, what: str = "") -> dict:
                self.requests.append((op, dict(payload)))
                if op == "timed":
                    return {"ms": 1.0, "host_ms": 0.1, "tail_ms": 0.0}
                if op == "last_out":
                    return {"out": {"kind": "tensor"}}
                return {}

            def out_specs(self, key: object, like: object) -> list:
                return [{"slot": 1}]

            def poison_outputs(self, specs: list) -> None:
                pass

            def outputs(self, meta: object, specs: list) -> torch.Tensor:
                return ref.clone()

        rc = FakeRunner()
        fn = RemoteCallable.__new__(RemoteCallable)
        fn.rc, fn.label = rc, "k"
        problem = SimpleNamespace(device=Device("cpu"), allow_inplace=False, atol=1e-5, rtol=1e-5)
        sets = [timing._InputSet([ref.clone()], ref, None, 0)]
        t = remote_timing.make_remote_timer(timing._Timer, problem, timing.Target("kernel", fn, True), sets, None,
                                            None, timing.BenchParams())
        t.set_args = [[{"t": {"slot": 0}}]]
        for i, checked in enumerate([False, True, False, True]):
            t.timed_call(i, checked)
        timed = [p for op, p in rc.requests if op == "timed"]
        self.assertEqual(len(timed), 4)
        for p in timed:
            self.assertEqual(p, timed[0])
            self.assertNotIn("out", p)
        self.assertEqual([op for op, _ in rc.requests], ["timed", "timed", "last_out", "timed", "timed", "last_out"])
        self.assertEqual(t.checked, 2)


class RemoteAllocatedTest(unittest.TestCase):
    """The judge collects what the runner says its tensors hold after each
    timed call, for leak_reason; a figure that is not a count is ignored."""

    def test_collected_from_the_timed_replies(self) -> None:
        from types import SimpleNamespace

        from kagent_harness import remote_timing, timing
        from kagent_harness.device import Device
        from kagent_harness.remote import RemoteCallable

        ref = torch.ones(4)
        figures = iter([(64 << 20) * i for i in range(20)] + ["7", True, -1, 2.5])

        class FakeRunner:
            pid = os.getpid()

            def request(self, op: str, payload: dict, what: str = "") -> dict:
                return {"ms": 1.0, "host_ms": 0.1, "tail_ms": 0.0, "allocated": next(figures)}

        fn = RemoteCallable.__new__(RemoteCallable)
        fn.rc, fn.label = FakeRunner(), "k"
        problem = SimpleNamespace(device=Device("cpu"), allow_inplace=False, atol=1e-5, rtol=1e-5)
        sets = [timing._InputSet([ref.clone()], ref, None, 0)]
        t = remote_timing.make_remote_timer(timing._Timer, problem, timing.Target("kernel", fn, True), sets, None,
                                            None, timing.BenchParams())
        t.set_args = [[{"t": {"slot": 0}}]]
        for i in range(24):
            t.timed_call(i, False)
        self.assertEqual(t.allocated, [(64 << 20) * i for i in range(20)])
        self.assertIn("64.0 MiB a call", timing_stats.leak_reason(t.allocated))


class RemoteHostCheckTest(unittest.TestCase):
    """The judge's host check of a runner's calls, on a clock the test moves:
    one burst late by a moment is timed again and passes; a kernel whose
    bursts are all long fails. The device burst's verdict likewise."""

    def check(self, *burst_s: float, device_bursts: tuple = ()) -> tuple:
        """The host check's result and the timer's forged reason."""
        from types import SimpleNamespace
        from unittest import mock

        from kagent_harness import remote_timing
        from kagent_harness.device import Device
        from kagent_harness.remote import RemoteCallable

        clock = [0.0]
        delays = list(burst_s)

        class FakeRunner:
            pid = os.getpid()

            def request(self, op: str, payload: dict, what: str = "") -> dict:
                if op == "burst":
                    clock[0] += delays.pop(0) if payload["calls"] else 0.0001
                    return {"event_ms": 10.0}
                return {}

        ref = torch.ones(4)
        fn = RemoteCallable.__new__(RemoteCallable)
        fn.rc, fn.label = FakeRunner(), "k"
        problem = SimpleNamespace(device=Device("cpu"), allow_inplace=False, atol=1e-5, rtol=1e-5)
        sets = [timing._InputSet([ref.clone()], ref, None, 0)]
        t = remote_timing.make_remote_timer(timing._Timer, problem, timing.Target("kernel", fn, True), sets, None,
                                            None, timing.BenchParams())
        t.set_args = [[{"t": {"slot": 0}}]]
        t.dev = SimpleNamespace(is_gpu=True, can_spin=False)
        t.times, t.ping_ms = [1.0], 0.0
        if device_bursts:
            verdicts = list(device_bursts)
            t._device_burst = lambda calls, median: verdicts.pop(0)
        with mock.patch.object(remote_timing, "wall", lambda: clock[0]):
            out = t.host_check()
        return out, t.forged

    def test_a_late_burst_is_timed_again(self) -> None:
        out, forged = self.check(0.040, 0.011)  # 40 ms, then 11 ms, for 10 ms of device time
        self.assertEqual((out["passed"], out["attempts"], forged), (True, 2, ""))
        self.assertAlmostEqual(out["host_ms"], 10.9, places=3)

    def test_long_every_time_fails(self) -> None:
        out, forged = self.check(0.040, 0.040)
        self.assertEqual((out["passed"], out["attempts"], forged), (False, timing_stats.HOST_ATTEMPTS, ""))

    def test_a_device_burst_over_its_bounds_once_is_timed_again(self) -> None:
        _, forged = self.check(0.011, device_bursts=("too long", ""))
        self.assertEqual(forged, "")
        _, forged = self.check(0.011, device_bursts=("too long", "still too long"))
        self.assertEqual(forged, "still too long")


class DeviceBurstVerdictTest(unittest.TestCase):
    """The bound on a runner's device-side times (remote_timing): numbers a
    runner could report, against the judge's wall clock."""

    def verdict(self, **kw: float) -> str:
        from kagent_harness.remote_timing import device_burst_verdict

        args = {"median": 0.05, "calls": 100, "spin_ms": 30.0, "event_ms": 5.0, "wall_ms": 36.0, "empty_wall_ms": 30.5}
        args.update(kw)
        return device_burst_verdict(**args)  # type: ignore[arg-type]

    def test_honest(self) -> None:
        self.assertEqual(self.verdict(), "")
        # Host-bound calls: the spin covers their enqueue, so the burst's own
        # wall time is its device time even when the host is slow per call.
        self.assertEqual(self.verdict(median=0.01, event_ms=1.0, wall_ms=31.6), "")

    def test_runner_that_skips_the_spin(self) -> None:
        # Both bursts end long before a 30 ms spin could have.
        self.assertIn("does not time its calls", self.verdict(wall_ms=6.0, empty_wall_ms=0.5))
        # Spins only when empty: the full burst ends before the empty one.
        self.assertIn("does not time its calls", self.verdict(median=0.001, event_ms=0.1, wall_ms=6.0))

    def test_median_below_the_burst(self) -> None:
        self.assertIn("median", self.verdict(median=0.005, event_ms=10.0, wall_ms=41.0))

    def test_device_time_below_the_judges_clock(self) -> None:
        # 100 calls took 20 ms beyond the spin; the runner claims 1 ms.
        self.assertIn("by the judge's clock", self.verdict(median=0.01, event_ms=1.0, wall_ms=50.5))
