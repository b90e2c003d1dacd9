"""Memory planning and leaks (memplan.py, PROTOCOL.md Memory).

- plan_draws keeps every draw where they fit, two (a public and the secret
  one) where only those fit, and refuses with the sizes otherwise;
- a worker under KAGENT_MEMORY_LIMIT stores fewer draws and still verifies and
  times a kernel, or refuses the problem as ``oom`` with a message saying what
  to change;
- many candidates verified and timed in one worker, and the problem unloaded
  and loaded again, leave the memory the worker holds flat: the tensors its
  garbage collector sees, the candidates it keeps (MAX_CANDIDATES) and the
  buffers it shares with their runners.
"""

from __future__ import annotations

import os
import unittest
from typing import Any, Dict

from kagent_harness import memplan
from kagent_harness.room import MAX_CANDIDATES
from tests.test_memory import CANDIDATE as MEMORY_CANDIDATE
from tests.helpers import TempFilesCase
from tests.test_memory import PROBLEM
from tests.worker_client import WorkerClient

MIB = 1 << 20
GIB = 1 << 30
SEEDS = [11, 12, 13]

# A problem of N elements (x * 2 + 1) and a kernel_function computing it, as
# the peak-memory test uses; each candidate gets a line of its own so that
# its source differs.
CANDIDATE = "# variant {k}" + MEMORY_CANDIDATE


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


class PlanTest(unittest.TestCase):
    def test_all_draws_when_they_fit(self) -> None:
        p = memplan.plan_draws(3, GIB, GIB, 0, 0, 100 * GIB, 2 * GIB)
        self.assertEqual(p.draws, 3)
        self.assertEqual(p.note, "")

    def test_two_draws_when_three_do_not_fit(self) -> None:
        # X = Y = 1 GiB, one input set: D draws 2D GiB, verification's
        # working memory 7, the runner 3, its kept outputs D; 3 draws: 19 GiB
        # (+ scratch), 2 draws: 16 GiB; 90% of 20 GiB is 18.
        p = memplan.plan_draws(3, GIB, GIB, 0, 0, 18 * GIB, 2 * GIB)
        self.assertEqual(p.draws, 2)
        self.assertIn("stores 2 of 3 draws", p.note)

    def test_refuses_with_the_sizes(self) -> None:
        p = memplan.plan_draws(3, 4 * GIB, 2 * GIB, 0, 0, 20 * GIB, 6 * GIB)
        self.assertEqual(p.draws, 0)
        self.assertIn("4.0 GiB of inputs", p.note)
        self.assertIn("time a smaller size (kagent.yaml sizes and --size", p.note)

    def test_buffer_sets_and_kept_runners_follow_the_input_size(self) -> None:
        h200 = 140 * GIB
        # Small inputs: four sets per runner, eight runners kept.
        self.assertEqual(memplan.buffer_sets(48 * MIB, h200), 4)
        self.assertEqual(memplan.kept_runners(48 * MIB, 48 * MIB, 4, h200), memplan.MAX_KEPT)
        # 2 GiB inputs: three sets fit in 5% of the device.
        self.assertEqual(memplan.buffer_sets(2 * GIB, h200), 3)
        # The 6.4 GB ReLU (inputs and outputs 6 GiB): one set, two runners
        # (a comparison needs the candidate's and the best's).
        x = 6 * GIB
        sets = memplan.buffer_sets(x, h200)
        self.assertEqual(sets, 1)
        self.assertEqual(memplan.runner_bytes(x, x, sets), 3 * x)
        self.assertEqual(memplan.kept_runners(x, x, sets, h200), 2)
        # Inputs larger than the device's share still get one set.
        self.assertEqual(memplan.buffer_sets(100 * GIB, h200), 1)

    def test_need_counts_the_runners_input_sets(self) -> None:
        # Verification with four sets: 4 X + 3 Y + 3 more X, and the new
        # runner's four sets and two outputs; two runners of a comparison:
        # 2 (4 X + 2 Y), less.
        need1 = memplan.need_for(3, GIB, GIB, 0, 0, 1)
        need4 = memplan.need_for(3, GIB, GIB, 0, 0, 4)
        self.assertEqual(need4 - need1, 6 * GIB)
        # A plan with four sets stores fewer draws where one set would store
        # all (19 GiB and scratch with one set, 22 GiB for two draws with four).
        self.assertEqual(memplan.plan_draws(3, GIB, GIB, 0, 0, 21 * GIB, 2 * GIB, 1).draws, 3)
        self.assertEqual(memplan.plan_draws(3, GIB, GIB, 0, 0, 21 * GIB, 2 * GIB, 4).draws, 0)

    def test_need_counts_what_the_worker_makes_room_for(self) -> None:
        # The plan's need is the stored draws plus what the worker makes room
        # for before each verification (worker._need): on an H100 80GB, a
        # 6 GiB-per-tensor problem's 2 draws and verification need 96 GiB
        # (found on one: the plan had counted 66), so its load is refused with
        # the sizes, and the input kernel is not blamed for running out of
        # memory; an H200 stores 3 draws.
        x = 6 * GIB
        h100, h200 = 79 * GIB, 139 * GIB
        self.assertEqual(memplan.need_for(2, x, x, 0, 0, 1) - memplan.scratch_for(x, x), 96 * GIB)
        p = memplan.plan_draws(3, x, x, 0, 0, h100 - 2 * x, 2 * x, memplan.buffer_sets(x, h100))
        self.assertEqual(p.draws, 0)
        self.assertIn("the problem needs about 96.2 GiB", p.note)
        self.assertEqual(memplan.plan_draws(3, x, x, 0, 0, h200 - 2 * x, 2 * x, memplan.buffer_sets(x, h200)).draws, 3)

    def test_waits_while_memory_comes_back(self) -> None:
        # A replaced worker's memory returns over 2 s: the wait ends as soon
        # as the need is met, not at its limit.
        clock = FakeClock()
        free = lambda: int(min(10 * GIB, 2 * GIB + 4 * GIB * clock.t))  # noqa: E731
        got = memplan.wait_for_memory(free, 9 * GIB, sleep=clock.sleep, clock=clock.now)
        self.assertGreaterEqual(got, 9 * GIB)
        self.assertLess(clock.t, 2.5)

    def test_wait_ends_when_nothing_comes_back(self) -> None:
        clock = FakeClock()
        got = memplan.wait_for_memory(lambda: 3 * GIB, 9 * GIB, sleep=clock.sleep, clock=clock.now)
        self.assertEqual(got, 3 * GIB)
        self.assertGreaterEqual(clock.t, memplan.STILL_S)
        self.assertLess(clock.t, memplan.STILL_S + 1)

    def test_no_wait_when_memory_is_free(self) -> None:
        clock = FakeClock()
        memplan.wait_for_memory(lambda: 20 * GIB, 9 * GIB, sleep=clock.sleep, clock=clock.now)
        self.assertEqual(clock.t, 0.0)

    def test_memory_limit_parsing(self) -> None:
        cases = {"": None, "512M": 512 * MIB, "2g": 2 * GIB, "1.5GiB": None, "3GB": 3 * GIB, "junk": None,
                 "1048576": MIB}
        for raw, want in cases.items():
            old = os.environ.get("KAGENT_MEMORY_LIMIT")
            os.environ["KAGENT_MEMORY_LIMIT"] = raw
            try:
                self.assertEqual(memplan.memory_limit(), want, raw)
            finally:
                if old is None:
                    del os.environ["KAGENT_MEMORY_LIMIT"]
                else:
                    os.environ["KAGENT_MEMORY_LIMIT"] = old


class PoisonSampleTest(unittest.TestCase):
    """Large output buffers are poisoned on a random sample, small ones whole:
    an output the runner left unwritten shows either way."""

    def test_sample_and_whole(self) -> None:
        import torch

        from kagent_harness import remote

        class Fake:
            def __init__(self, t: torch.Tensor) -> None:
                self.t = t

            def host(self, spec: Dict[str, Any]) -> torch.Tensor:
                return self.t

        big = torch.zeros(remote.POISON_WHOLE_BYTES // 4)
        remote.RunnerClient.poison_outputs(Fake(big), [{}])  # type: ignore[arg-type]
        nans = int(torch.isnan(big).sum())
        self.assertTrue(torch.isnan(big[0]) and torch.isnan(big[-1]))
        self.assertGreater(nans, remote.POISON_SAMPLE // 2)
        self.assertLessEqual(nans, remote.POISON_SAMPLE + 2)
        first = torch.isnan(big).nonzero().flatten()
        big.zero_()
        remote.RunnerClient.poison_outputs(Fake(big), [{}])  # type: ignore[arg-type]
        self.assertFalse(torch.equal(first, torch.isnan(big).nonzero().flatten()), "the sample must change per call")
        small = torch.zeros(1024, dtype=torch.int32)
        remote.RunnerClient.poison_outputs(Fake(small), [{}])  # type: ignore[arg-type]
        self.assertTrue(bool((small == torch.iinfo(torch.int32).max).all()))


class RunnerOOMScoreTest(unittest.TestCase):
    """When the machine runs out of memory, the kernel kills a runner (a
    candidate's process) before its judge or kagent."""

    @unittest.skipUnless(os.path.exists("/proc/self/oom_score_adj"), "needs /proc (Linux)")
    def test_runner_is_first_to_die(self) -> None:
        from kagent_harness.device import Device
        from kagent_harness.forkserver import RUNNER_OOM_SCORE_ADJ
        from kagent_harness.remote import RunnerClient

        rc = RunnerClient(Device("cpu"))
        try:
            with open(f"/proc/{rc.pid}/oom_score_adj", encoding="ascii") as f:
                self.assertEqual(int(f.read()), RUNNER_OOM_SCORE_ADJ)
        finally:
            rc.close()
        with open("/proc/self/oom_score_adj", encoding="ascii") as f:
            self.assertLess(int(f.read()), RUNNER_OOM_SCORE_ADJ)


class WorkerMemoryTest(TempFilesCase):
    def _load(self, client: WorkerClient, problem: str) -> Dict[str, Any]:
        return client.request("load_problem", timeout=300, problem_path=problem, seeds=SEEDS, dtype="fp32",
                              tf32="allow")

    def _verify_and_bench(self, client: WorkerClient, pid: str, cand: str) -> Dict[str, Any]:
        """Verify a candidate (it must pass) and time it (it must not fail); the timing's result."""
        v = client.request("verify", timeout=300, problem_id=pid, candidate_path=cand, require_triton=False,
                           check_launch=False)
        self.assertTrue(v["ok"] and v["result"]["passed"], v)
        b = client.request("bench", timeout=300, problem_id=pid, target="kernel", candidate_path=cand,
                           require_triton=False, warmup_ms=1, rep_ms=1, min_reps=3, max_reps=3)
        self.assertTrue(b["ok"] and b["result"]["failure"] == "", b)
        return b["result"]

    def test_fewer_draws_under_a_memory_limit(self) -> None:
        # X = Y = 16 MiB, no parameters, no flush on CPU. Three draws need
        # 19 X + scratch, two 16 X + scratch: a limit whose 90% (with the
        # first draw, built when the plan is made) lies between.
        n = 4 * MIB
        x = 4 * n
        mid = (memplan.need_for(2, x, x, 0, 0) + memplan.need_for(3, x, x, 0, 0)) / 2
        limit = int(mid / memplan.PLAN_FRACTION) - 2 * x
        problem = self.write(PROBLEM.format(n=n), "problem.py")
        cand = self.write(CANDIDATE.format(k=0), "kernel.py")
        client = WorkerClient("cpu", env={"KAGENT_MEMORY_LIMIT": str(limit)})
        try:
            client.start()
            load = self._load(client, problem)
            self.assertTrue(load["ok"], load)
            info = load["result"]
            self.assertEqual(info["draws"], 2, info)
            self.assertEqual(info["memory"]["draws"], 2, info)
            self.assertIn("stores 2 of 3 draws", info["memory"]["note"])
            pid = info["problem_id"]
            v = client.request("verify", timeout=300, problem_id=pid, candidate_path=cand, require_triton=False,
                               check_launch=False)
            self.assertTrue(v["ok"] and v["result"]["passed"], v)
            b = client.request("bench", timeout=300, problem_id=pid, target="kernel", candidate_path=cand,
                               require_triton=False, warmup_ms=1, rep_ms=1, min_reps=4, max_reps=4)
            self.assertTrue(b["ok"], b)
            self.assertEqual(b["result"]["failure"], "", b["result"])
            # Timing rotates over the stored draws, at most the runner's
            # input buffer sets (one here: 4 copies of X exceed 5% of the limit).
            self.assertEqual(info["memory"]["buffer_sets"], 1, info)
            self.assertEqual(b["result"]["sets"], 1)
        finally:
            client.close()

    def test_large_inputs_get_one_buffer_set_and_two_runners(self) -> None:
        # X = Y = 64 MiB under a 1600 MiB limit: two input sets (128 MiB)
        # would take more than 5% of it, so each runner gets one; two
        # runners (192 MiB each) fit in 30% of it, three do not; the three
        # draws (19 X and the comparison scratch, 1408 MiB) fit in 90%.
        n = 16 * MIB
        problem = self.write(PROBLEM.format(n=n), "problem.py")
        client = WorkerClient("cpu", env={"KAGENT_MEMORY_LIMIT": "1600M"})
        try:
            client.start()
            load = self._load(client, problem)
            self.assertTrue(load["ok"], load)
            info = load["result"]
            self.assertEqual(info["memory"]["buffer_sets"], 1, info)
            self.assertEqual(info["memory"]["kept_runners"], 2, info)
            self.assertEqual(info["memory"]["max_buffer_sets"], memplan.MAX_SETS, info)
            pid = info["problem_id"]
            for k in range(4):
                b = self._verify_and_bench(client, pid, self.write(CANDIDATE.format(k=k), f"kernel_{k}.py"))
                self.assertEqual(b["sets"], 1, b)
                m = client.request("memory")["result"]
                self.assertLessEqual(m["candidates"], 2, m)
                # One input buffer and one output buffer per kept runner.
                self.assertLessEqual(m["slot_bytes"], m["candidates"] * 2 * 4 * n, m)
        finally:
            client.close()

    def test_refused_when_two_draws_do_not_fit(self) -> None:
        problem = self.write(PROBLEM.format(n=4 * MIB), "problem.py")
        client = WorkerClient("cpu", env={"KAGENT_MEMORY_LIMIT": "100M"})
        try:
            client.start()
            load = self._load(client, problem)
            self.assertFalse(load["ok"], load)
            self.assertEqual(load["error"]["kind"], "oom", load)
            self.assertIn("problem.py: the problem needs about", load["error"]["message"])
            self.assertFalse(load["error"]["fatal"], load)
            # The worker is still usable: a smaller problem loads.
            small = self.write(PROBLEM.format(n=1024), "small.py")
            self.assertTrue(self._load(client, small)["ok"])
        finally:
            client.close()

    def test_memory_stays_flat_over_many_candidates(self) -> None:
        n = 256 * 1024  # 1 MiB inputs and outputs
        problem = self.write(PROBLEM.format(n=n), "problem.py")
        client = WorkerClient("cpu")
        readings = []
        try:
            client.start()
            load = self._load(client, problem)
            self.assertTrue(load["ok"], load)
            pid = load["result"]["problem_id"]
            count = MAX_CANDIDATES + 4
            for k in range(count):
                self._verify_and_bench(client, pid, self.write(CANDIDATE.format(k=k), f"kernel_{k}.py"))
                m = client.request("memory")
                self.assertTrue(m["ok"], m)
                readings.append(m["result"])
            # The problem unloaded and loaded again, three times.
            for _ in range(3):
                self.assertTrue(client.request("unload_problem", problem_id=pid)["ok"])
                load = self._load(client, problem)
                self.assertTrue(load["ok"], load)
                pid = load["result"]["problem_id"]
            after_reloads = client.request("memory")["result"]
        finally:
            client.close()

        def own_bytes(r: Dict[str, Any]) -> int:
            # Tensors the worker holds besides the buffers it shares with
            # the kept candidates' runners (views of those are tensors too).
            return sum(t["bytes"] for t in r["tensors"] if t["device"] == "cpu") - r["slot_bytes"]

        first = own_bytes(readings[0])
        for k, r in enumerate(readings):
            self.assertLessEqual(r["candidates"], MAX_CANDIDATES, r)
            # The stored draws and references: nothing grows with the
            # number of candidates.
            self.assertLessEqual(own_bytes(r), first + MIB, f"candidate {k}: {r}")
        # The shared buffers grow with the kept candidates, up to the cap:
        # each kept candidate has at most SETS input buffers for verification
        # and as many for timing, and an output buffer for each (how many
        # input buffers a candidate touched varies: calls land in one picked
        # at random).
        x = y = 4 * n
        per_candidate = 2 * memplan.MAX_SETS * x + 2 * y
        self.assertGreater(readings[MAX_CANDIDATES - 1]["slot_bytes"], 0)
        for r in readings:
            self.assertLessEqual(r["slot_bytes"], min(r["candidates"], MAX_CANDIDATES) * per_candidate, r)
        # Unloading drops the candidates; the reloaded problem holds what the
        # first load held.
        self.assertEqual(after_reloads["candidates"], 0, after_reloads)
        self.assertEqual(after_reloads["problems"], 1, after_reloads)
        self.assertEqual(after_reloads["slot_bytes"], 0, after_reloads)
        self.assertLessEqual(own_bytes(after_reloads), first + MIB, after_reloads)


if __name__ == "__main__":
    unittest.main()


class OomRetryTest(unittest.TestCase):
    """A timing op that runs out of device memory while other kept runners
    hold memory closes them all and runs once more; with nothing else kept
    the oom is the candidate's."""

    def worker(self, kept: int) -> Any:
        from collections import OrderedDict

        from kagent_harness.worker import Worker

        class Dev:
            is_gpu = False

            def empty_cache(self) -> None:
                pass

            def free_memory(self) -> int:
                return 0

        w = Worker.__new__(Worker)
        w.device = Dev()
        w.candidates = OrderedDict()
        for i in range(kept):
            w.candidates[("p1", f"/k{i}.py", "h")] = type("C", (), {"module": None})()
        return w

    def test_retried_after_closing_the_others(self) -> None:
        from kagent_harness.failures import RequestError

        w = self.worker(kept=3)
        mine = ("p1", "/mine.py", "h")
        runs = []

        def run() -> Dict[str, Any]:
            runs.append(len(w.candidates))
            if len(runs) == 1:
                raise RequestError("oom", "CUDA out of memory")
            return {"ms": 1.0}

        w._need = lambda problem, op: 0
        out = w._timing(None, (mine,), run)
        self.assertEqual(runs, [3, 0])
        self.assertTrue(out["oom_retried"])

    def test_no_retry_when_nothing_else_is_kept(self) -> None:
        from kagent_harness.failures import RequestError

        w = self.worker(kept=0)
        calls = []

        def run() -> Dict[str, Any]:
            calls.append(1)
            raise RequestError("oom", "CUDA out of memory")

        w._need = lambda problem, op: 0
        with self.assertRaises(RequestError):
            w._timing(None, (("p1", "/mine.py", "h"),), run)
        self.assertEqual(len(calls), 1)

    def test_verification_out_of_memory_with_others_kept_is_retried(self) -> None:
        # The judge's own copies running out of memory raise (not a verdict):
        # with other runners kept, the caller is told "oom" and tries again.
        from kagent_harness.failures import RequestError

        w = self.worker(kept=2)

        def run() -> Any:
            raise RequestError("oom", "CUDA out of memory. Tried to allocate 6.00 GiB")

        result, cand = w._verify_once(("p1", "/mine.py", "h"), run, lambda: True)
        self.assertEqual(result["failure"], "oom")
        self.assertIsNone(cand)
        with self.assertRaises(RequestError):
            w._verify_once(("p1", "/mine.py", "h"), run, lambda: False)

    def test_a_spare_lent_buffers_counts_as_holding_memory(self) -> None:
        from kagent_harness.failures import RequestError
        from kagent_harness.spare import Spare

        w = self.worker(kept=0)
        spare = Spare()
        spare.rc = type("RC", (), {"layout": lambda self: {"in": 4}, "close": lambda self: None,
                                   "settle": lambda self, timeout: None})()
        w.problems = {"p1": type("P", (), {"spare": spare})()}
        runs = []

        def run() -> Dict[str, Any]:
            runs.append(spare.rc is not None)
            if len(runs) == 1:
                raise RequestError("oom", "CUDA out of memory")
            return {"ms": 1.0}

        w._need = lambda problem, op: 0
        out = w._timing(None, (("p1", "/mine.py", "h"),), run)
        self.assertEqual(runs, [True, False], "the spare closed before the second try")
        self.assertTrue(out["oom_retried"])
        self.assertTrue(w._holders() is False)

    def test_a_candidate_out_of_memory_beside_the_next_spare_is_retried(self) -> None:
        # The next candidate's spare, lent its buffers during this
        # verification, held memory the candidate ran out of: tried again
        # with the spare closed.
        import tempfile
        from unittest import mock

        from kagent_harness.spare import Spare

        w = self.worker(kept=0)
        w.device.free_memory = lambda: 1 << 40
        w.device.is_gpu = False
        w.guard = None
        spare = Spare()
        problem = type("P", (), {"id": "p1", "spare": spare})()
        w.problems = {"p1": problem}
        w._problem = lambda req: problem
        w._need = lambda problem, op: 0
        lent = type("RC", (), {"layout": lambda self: {"in": 4}, "close": lambda self: None})
        verdicts = []

        def fake_verify(problem: Any, path: str, opts: Any, guard: Any) -> Any:
            verdicts.append(spare.rc is not None)
            if len(verdicts) == 1:
                spare.rc = lent()  # started, and lent its buffers, during the verification
                return {"passed": False, "failure": "oom", "reason": "CUDA out of memory"}, None
            return {"passed": True, "failure": "", "reason": ""}, None

        with tempfile.NamedTemporaryFile("w", suffix=".py") as f, \
                mock.patch("kagent_harness.verify.verify", fake_verify):
            f.write("x = 1\n")
            f.flush()
            out = w.verify({"problem_id": "p1", "candidate_path": f.name, "require_triton": False})
        self.assertEqual(verdicts, [False, False], "the spare was closed before the second try")
        self.assertTrue(out["passed"] and out["oom_retried"], out)

    def test_other_failures_are_not_retried(self) -> None:
        from kagent_harness.failures import RequestError

        w = self.worker(kept=2)
        calls = []

        def run() -> Dict[str, Any]:
            calls.append(1)
            raise RequestError("crash", "the runner died")

        with self.assertRaises(RequestError):
            w._timing(None, (), run)
        self.assertEqual(len(calls), 1)
