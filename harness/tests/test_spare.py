"""The spare runner (spare.py): the next candidate's runner started during a
verification, taken ready by the next one, settled before every timing,
closed first when memory is short, and never a process a candidate ran in."""

from __future__ import annotations

import os
import textwrap
import unittest
from typing import Any, Dict, List
from unittest import mock

from kagent_harness import spare as sp
from kagent_harness.failures import CheckFailure
from tests.worker_client import TESTDATA_DIR, WorkerClient

SEEDS = [5, 6, 424242]


class FakeRC:
    """A runner client that records what was asked of it."""

    def __init__(self, fail_settle: bool = False, slots: Dict[Any, int] = None) -> None:
        self.fail_settle = fail_settle
        self.closed = False
        self.settled = 0
        self.slots = dict(slots or {})

    def settle(self, timeout: float = 0.0) -> None:
        self.settled += 1
        if self.fail_settle:
            raise CheckFailure("crash", "the runner did not start")

    def close(self) -> None:
        self.closed = True

    def layout(self) -> Dict[Any, int]:
        return dict(self.slots)

    def ended(self, timeout: float) -> bool:
        return False

    def ask_ahead(self, op: str) -> bool:
        self.asked = getattr(self, "asked", []) + [op]
        return True


class FakeDevice:
    is_gpu = True
    is_cuda = False

    def __init__(self, free: int = 1 << 40, total: int = 1 << 40) -> None:
        self.free = free
        self.total = total

    def info(self) -> Dict[str, Any]:
        return {"total_memory": self.total}

    def free_memory(self) -> int:
        return self.free


class SpareUnitTest(unittest.TestCase):
    def test_take_settles_and_hands_over_once(self) -> None:
        s = sp.Spare()
        self.assertIsNone(s.take(), "no spare started")
        rc = FakeRC()
        s.rc = rc
        self.assertIs(s.take(), rc)
        self.assertEqual(rc.settled, 1, "taken only once it answered its start")
        self.assertIsNone(s.take(), "a spare is handed over once")
        self.assertEqual(s.taken, 1)

    def test_a_spare_that_failed_is_closed_not_handed_over(self) -> None:
        s = sp.Spare()
        rc = FakeRC(fail_settle=True)
        s.rc = rc
        self.assertIsNone(s.take())
        self.assertTrue(rc.closed)
        rc2 = FakeRC(fail_settle=True)
        s.rc = rc2
        s.settle()
        self.assertTrue(rc2.closed, "a spare that fails to settle before a timing is closed")
        self.assertIsNone(s.rc)

    def test_layout_keeps_the_largest_size_of_each_buffer(self) -> None:
        s = sp.Spare()
        s.record(FakeRC(slots={"a": 10, "b": 5}))
        s.record(FakeRC(slots={"a": 7, "c": 1}))
        self.assertEqual(s.layout, {"a": 10, "b": 5, "c": 1})

    def test_switch(self) -> None:
        with mock.patch.dict(os.environ, {"KAGENT_SPARE_RUNNER": ""}):
            self.assertTrue(sp.enabled(FakeDevice()), "on for GPUs by default")
            cpu = FakeDevice()
            cpu.is_gpu = False
            self.assertFalse(sp.enabled(cpu), "off for the CPU by default")
        with mock.patch.dict(os.environ, {"KAGENT_SPARE_RUNNER": "0"}):
            self.assertFalse(sp.enabled(FakeDevice()))
            s = sp.Spare()
            s.start(FakeDevice())
            self.assertIsNone(s.rc, "KAGENT_SPARE_RUNNER=0 starts no spare")

    def test_buffers_are_lent_ahead_only_on_a_device_with_room(self) -> None:
        s = sp.Spare()
        s.layout = {"in": 4 << 30, "out": 4 << 30}
        s.need = 10 << 30
        cuda = FakeDevice(free=100 << 30)
        cuda.is_cuda = True
        with mock.patch("kagent_harness.devbuf.enabled", return_value=True):
            self.assertEqual(s._lendable(cuda), s.layout)
            cuda.free = (10 + 8) << 30  # the spare's buffers, no headroom
            self.assertEqual(s._lendable(cuda), {}, "verification's working memory comes first")
            cuda.free, cuda.total = 100 << 30, 140 << 30
            self.assertEqual(s._lendable(cuda), {}, "8 GiB of buffers is more than 5% of a 140 GiB device")
        with mock.patch("kagent_harness.devbuf.enabled", return_value=False):
            cuda.free = 100 << 30
            self.assertEqual(s._lendable(cuda), {}, "host buffers are never lent ahead")

    def test_what_the_running_verification_holds_is_not_counted_twice(self) -> None:
        # The running verification's runner was the last spare: the 8 GiB it
        # was lent are part of that verification's 10 GiB need, already made.
        s = sp.Spare()
        s.layout = {"in": 4 << 30, "out": 4 << 30}
        s.need = 10 << 30
        cuda = FakeDevice(free=(2 + 8 + 1) << 30, total=1 << 40)
        cuda.is_cuda = True
        with mock.patch("kagent_harness.devbuf.enabled", return_value=True):
            self.assertEqual(s._lendable(cuda), {}, "without it, 11 GiB free is short of 10 + 8 + 1")
            self.assertEqual(s._lendable(cuda, in_use=8 << 30), s.layout,
                             "2 GiB still to make, the spare's 8 and the headroom's 1 fit in 11")
            cuda.free -= 1
            self.assertEqual(s._lendable(cuda, in_use=8 << 30), {})
            self.assertEqual(s.ahead(cuda), (8 + 1) << 30, "what the next spare takes, with its headroom")

    def test_the_share_can_be_set(self) -> None:
        s = sp.Spare()
        s.layout = {"in": 4 << 30, "out": 4 << 30}
        cuda = FakeDevice(free=100 << 30, total=140 << 30)
        cuda.is_cuda = True
        with mock.patch("kagent_harness.devbuf.enabled", return_value=True):
            for raw, lent in (("", False), ("0.1", True), ("0", False), ("2", False), ("much", False)):
                with mock.patch.dict(os.environ, {"KAGENT_SPARE_LEND_SHARE": raw}):
                    self.assertEqual(bool(s._lendable(cuda)), lent, f"KAGENT_SPARE_LEND_SHARE={raw!r}")
                    self.assertEqual(bool(s.ahead(cuda)), lent)

    def test_the_next_spare_is_told_what_the_taken_one_holds(self) -> None:
        from kagent_harness import remote

        class Ready(FakeRC):
            def request(self, op: str, payload: Any = None, what: str = "") -> Dict[str, Any]:
                return {"entry": "kernel_function"}

        class Problem:
            tf32 = False
            dtype = None
            device = FakeDevice()
            device.empty_cache = lambda: None  # type: ignore[attr-defined]

        problem = Problem()
        problem.spare = sp.Spare()
        problem.spare.rc = Ready(slots={"in": 3, "out": 4})
        started: List[int] = []
        with mock.patch.object(sp.Spare, "start", lambda self, device, in_use=0, on_device=True: started.append(in_use)):
            cand = remote.load_remote(problem, "/k.py", "x = 1\n", "", False, ahead=True)
        self.assertEqual(started, [7], "the 7 bytes lent to the runner taken are part of its verification's need")
        self.assertIsInstance(cand.rc, Ready)

    def test_the_device_step_waits_for_to_device(self) -> None:
        # Started before a quick timing, the spare's process alone runs: its
        # context (and lent buffers) are asked for by to_device, once.
        s = sp.Spare()
        rc = FakeRC()
        with mock.patch.dict(os.environ, {"KAGENT_SPARE_RUNNER": "1"}), \
                mock.patch("kagent_harness.remote.RunnerClient", lambda device, wait=True: rc):
            s.start(FakeDevice(), on_device=False)
            self.assertIs(s.rc, rc)
            self.assertEqual(getattr(rc, "asked", []), [], "device work asked for before to_device")
            s.to_device(FakeDevice())
            s.to_device(FakeDevice())
            self.assertEqual(rc.asked, ["context"], "the context is asked for once")
            s2, rc2 = sp.Spare(), FakeRC()
            with mock.patch("kagent_harness.remote.RunnerClient", lambda device, wait=True: rc2):
                s2.start(FakeDevice())
            self.assertEqual(rc2.asked, ["context"], "started on the device at once by default")

    def test_lent_counts_the_spares_buffers(self) -> None:
        s = sp.Spare()
        self.assertEqual(s.lent(), 0)
        s.rc = FakeRC(slots={"in": 3, "out": 4})
        self.assertEqual(s.lent(), 7)
        s.take()
        self.assertEqual(s.lent(), 0, "a spare taken is the verification's runner")


def _write(folder: str, name: str, body: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(body))
    return path


class MakeRoomOrderTest(unittest.TestCase):
    """Where the judge makes room: a spare holding lent buffers goes before
    any kept candidate, one without them after all of them."""

    def worker(self, lent: Any, frees: Dict[str, int], base: int = 0) -> Any:
        from collections import OrderedDict

        from kagent_harness.worker import Worker

        closed: List[str] = []

        class Dev:
            is_gpu = True

            def empty_cache(self) -> None:
                pass

            def free_memory(self) -> int:
                return base + sum(frees.get(c, 0) for c in closed)

        class Closing:
            module = None

            def __init__(self, name: str) -> None:
                self.name = name
                self.rc = FakeRC(slots={"buffers": frees.get(name, 0)})

            def close(self) -> None:
                closed.append(self.name)

        class SpareRC(FakeRC):
            def close(self) -> None:
                closed.append("spare")

        w = Worker.__new__(Worker)
        w.device = Dev()
        w.candidates = OrderedDict((("p1", f"/{n}.py", "h"), Closing(n)) for n in ("old", "best"))
        spare = sp.Spare()
        spare.rc = SpareRC(slots={"in": int(lent)} if lent else {})
        w.problems = {"p1": type("P", (), {"spare": spare})()}
        w.closed = closed
        w.spare = spare
        return w

    def test_a_spare_with_lent_buffers_goes_first(self) -> None:
        w = self.worker(lent=True, frees={"spare": 10})
        w._make_room(10)
        self.assertEqual(w.closed, ["spare"])

    def test_a_closed_runners_memory_is_waited_for_before_the_next_goes(self) -> None:
        w = self.worker(lent=False, frees={"old": 10})
        waited: List[float] = []
        freed_late = {"old": False}

        class Ending:
            def ended(self, timeout: float) -> bool:
                waited.append(timeout)
                freed_late["old"] = True
                return True

        w.candidates[("p1", "/old.py", "h")].rc = Ending()
        free = w.device.free_memory
        w.device.free_memory = lambda: free() if freed_late["old"] else 0
        w._make_room(10)
        self.assertEqual(w.closed, ["old"], "the best is kept: the old runner's memory came back as it ended")
        self.assertEqual(len(waited), 1)

    def test_a_spare_without_lent_buffers_goes_last(self) -> None:
        w = self.worker(lent=False, frees={"old": 5, "best": 5})
        w._make_room(10)
        self.assertEqual(w.closed, ["old", "best"], "the spare is kept where the candidates make the room")
        w = self.worker(lent=False, frees={"old": 5, "best": 5, "spare": 1})
        w._make_room(11)
        self.assertEqual(w.closed, ["old", "best", "spare"])


    def test_the_spare_to_be_taken_counts_as_made(self) -> None:
        # A verification needs 10, of which the spare it takes holds 4.
        w = self.worker(lent=4, frees={"old": 5, "best": 5, "spare": 4}, base=6)
        w._make_room(10, ready=w.spare)
        self.assertEqual(w.closed, [], "6 free and the spare's 4 are the 10")
        w = self.worker(lent=4, frees={"old": 5, "best": 5, "spare": 4}, base=6)
        w._make_room(10)
        self.assertEqual(w.closed, ["spare"], "for anything else the spare's buffers are not free")

    def test_the_spare_to_be_taken_goes_after_the_kept_candidates(self) -> None:
        w = self.worker(lent=4, frees={"old": 3, "best": 3, "spare": 4})
        w._make_room(10, ready=w.spare)
        self.assertEqual(w.closed, ["old", "best"])
        self.assertEqual(w.spare.lent(), 4)
        w = self.worker(lent=4, frees={"old": 1, "best": 1, "spare": 4})
        w._make_room(10, ready=w.spare)
        self.assertEqual(w.closed, ["old", "best", "spare"], "where nothing else makes the room")
        self.assertIsNone(w.spare.rc)

    def test_room_for_the_next_spare_closes_kept_candidates_only(self) -> None:
        w = self.worker(lent=4, frees={"old": 3, "best": 3, "spare": 4}, base=6)
        w._make_room(10, ready=w.spare, want=3)
        self.assertEqual(w.closed, ["old"], "the next spare's 3 come from the oldest kept candidate")
        w = self.worker(lent=4, frees={"old": 1, "best": 1, "spare": 4}, base=6)
        w._make_room(10, ready=w.spare, want=2)
        self.assertEqual(w.closed, ["old", "best"], "the spare taken is never closed for the next one's room")
        w = self.worker(lent=False, frees={"old": 1, "best": 1, "spare": 1}, base=10)
        w._make_room(10, ready=w.spare, want=2)
        self.assertEqual(w.closed, ["old", "best"], "nor is a spare without buffers")

    def test_no_runner_is_closed_for_room_it_cannot_make(self) -> None:
        w = self.worker(lent=4, frees={"old": 3, "best": 3, "spare": 4}, base=6)
        w._make_room(10, ready=w.spare, want=30)
        self.assertEqual(w.closed, [], "6 bytes of kept runners cannot make 30 more")
        w = self.worker(lent=4, frees={"old": 3, "best": 3, "spare": 4}, base=2)
        w._make_room(10, ready=w.spare, want=30)
        self.assertEqual(w.closed, ["old", "best"], "the need itself is still made")


class LendAheadTest(unittest.TestCase):
    """A runner started without waiting, lent buffers ahead (host slots
    standing in for device buffers): the replies are read by settle, and
    the lent buffer is the one the runner is then asked to use."""

    def test_lent_buffers_are_used_without_a_second_allocation(self) -> None:
        from kagent_harness import shm
        from kagent_harness.device import Device
        from kagent_harness.remote import RunnerClient

        with mock.patch.object(shm, "device_slot", lambda sid, n: shm.Slot(sid, n, lock=False)):
            rc = RunnerClient(Device("cpu"), wait=False)
            self.addCleanup(rc.close)
            self.assertTrue(rc.lend_ahead({("t", "main", 0, "in", 0): 4096, ("t", "main", "out", 0): 1024}))
            rc.settle()
            self.assertGreater(rc.pid, 0, "the hello was read")
            lent = rc._slots[("t", "main", 0, "in", 0)]
            self.assertIs(rc.slot(("t", "main", 0, "in", 0), 4096), lent)
            self.assertEqual(rc.layout(), {("t", "main", 0, "in", 0): 4096, ("t", "main", "out", 0): 1024})
            self.assertEqual(rc.request("ping"), rc.request("ping"))

    def test_more_buffers_than_one_message_carries(self) -> None:
        from kagent_harness import shm
        from kagent_harness.device import Device
        from kagent_harness.link import MAX_FDS
        from kagent_harness.remote import RunnerClient

        layout = {("w", "main", f"p{i}"): 256 for i in range(MAX_FDS + 5)}
        with mock.patch.object(shm, "device_slot", lambda sid, n: shm.Slot(sid, n, lock=False)):
            rc = RunnerClient(Device("cpu"), wait=False)
            self.addCleanup(rc.close)
            self.assertTrue(rc.lend_ahead(layout))
            self.assertEqual(rc._ahead, 2, "two messages, each answered")
            rc.settle()
            self.assertEqual(rc.layout(), layout)
            rc.request("ping")

    def test_a_buffer_that_cannot_be_made_lends_nothing(self) -> None:
        from kagent_harness import shm
        from kagent_harness.device import Device
        from kagent_harness.remote import RunnerClient

        made = []

        def one_then_none(sid: int, n: int):
            if made:
                return None
            made.append(shm.Slot(sid, n, lock=False))
            return made[0]

        with mock.patch.object(shm, "device_slot", one_then_none):
            rc = RunnerClient(Device("cpu"), wait=False)
            self.addCleanup(rc.close)
            self.assertFalse(rc.lend_ahead({"a": 4096, "b": 4096}))
            self.assertEqual(rc.layout(), {})
            rc.settle()


def _gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether process pid ended (or is a zombie) within within_s."""
    import time

    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/status") as f:
                if any(line.startswith("State:") and "Z" in line.split()[1] for line in f):
                    return True
        except (FileNotFoundError, ProcessLookupError):  # reaped, perhaps while read
            return True
        time.sleep(0.05)
    return False


class RunnerEndedTest(unittest.TestCase):
    def test_a_closed_runners_end_is_seen(self) -> None:
        from kagent_harness.device import Device
        from kagent_harness.remote import RunnerClient

        rc = RunnerClient(Device("cpu"))
        self.addCleanup(rc.close)
        self.assertGreater(rc.pid, 0)
        self.assertFalse(rc.ended(0.0), "a runner not closed is not waited for")
        rc.close()
        self.assertTrue(rc.ended(30.0))
        self.assertTrue(_gone(rc.pid, 1.0))


class InterferedSpareTest(unittest.TestCase):
    """Another process of the sandbox (a candidate's runner) may signal the
    spare: a stopped one delays the next verification by SPARE_WAIT_S at
    most, and is closed; a killed one is replaced. Neither decides a verdict."""

    def test_a_stopped_spare_is_closed_after_the_wait(self) -> None:
        import signal
        import time

        from kagent_harness import shm
        from kagent_harness.device import Device
        from kagent_harness.remote import RunnerClient

        with mock.patch.object(shm, "device_slot", lambda sid, n: shm.Slot(sid, n, lock=False)), \
                mock.patch.object(sp, "SPARE_WAIT_S", 0.5):
            rc = RunnerClient(Device("cpu"), wait=False)
            self.addCleanup(rc.close)
            os.kill(rc.inner_pid, signal.SIGSTOP)
            self.assertTrue(rc.lend_ahead({"in": 4096}))  # a reply it cannot send
            s = sp.Spare()
            s.rc = rc
            began = time.monotonic()
            self.assertIsNone(s.take(), "a spare that does not answer is not handed over")
            self.assertLess(time.monotonic() - began, 5.0)
            self.assertTrue(rc.closed)
            self.assertTrue(_gone(rc.inner_pid), "the stopped spare is killed")

    def test_a_killed_spare_is_replaced(self) -> None:
        import signal

        w = WorkerClient(env={"KAGENT_SPARE_RUNNER": "1"})
        self.addCleanup(w.close)
        w.start()
        r = w.request("load_problem", problem_path=os.path.join(TESTDATA_DIR, "problems", "add_relu", "problem.py"),
                      seeds=SEEDS)
        self.assertTrue(r["ok"], r)
        pid = r["result"]["problem_id"]
        cpu = os.path.join(TESTDATA_DIR, "candidates", "cpu")
        v = w.request("verify", problem_id=pid, candidate_path=os.path.join(cpu, "add_relu_ok.py"), require_triton=False)
        self.assertTrue(v["ok"] and v["result"]["passed"], v)
        [spare] = w.request("memory")["result"]["spare_pids"]
        os.kill(spare, signal.SIGKILL)
        self.assertTrue(_gone(spare))
        path = os.path.join(cpu, "add_relu_modelnew_ok.py")
        v = w.request("verify", problem_id=pid, candidate_path=path, require_triton=False)
        self.assertTrue(v["ok"] and v["result"]["passed"], v)
        ran = dict(w.request("memory")["result"]["runner_pids"])[os.path.basename(path)]
        self.assertNotEqual(ran, spare, "the candidate ran in a runner started for it")


class SpareWorkerTest(unittest.TestCase):
    """A real worker on the CPU with spares on (they are off there by default)."""

    def _worker(self, on: str = "1") -> WorkerClient:
        w = WorkerClient(env={"KAGENT_SPARE_RUNNER": on})
        self.addCleanup(w.close)
        w.start()
        return w

    def _load(self, w: WorkerClient) -> str:
        r = w.request("load_problem", problem_path=os.path.join(TESTDATA_DIR, "problems", "add_relu", "problem.py"),
                      seeds=SEEDS)
        self.assertTrue(r["ok"], r)
        return r["result"]["problem_id"]

    def _memory(self, w: WorkerClient) -> Dict[str, Any]:
        r = w.request("memory")
        self.assertTrue(r["ok"], r)
        return r["result"]

    def test_each_candidate_runs_in_a_process_no_candidate_ran_in(self) -> None:
        w = self._worker()
        pid = self._load(w)
        cpu = os.path.join(TESTDATA_DIR, "candidates", "cpu")
        paths = [os.path.join(cpu, n) for n in ("add_relu_ok.py", "wrong_values.py", "add_relu_modelnew_ok.py",
                                                "raises_exception.py")]
        verdicts: List[Dict[str, Any]] = []
        seen: set = set()  # every runner process so far
        spare = 0
        for path in paths:
            v = w.request("verify", problem_id=pid, candidate_path=path, require_triton=False)
            self.assertTrue(v["ok"], v)
            verdicts.append(v["result"])
            mem = self._memory(w)
            name = os.path.basename(path)
            self.assertEqual(mem["spares"], 1, f"a spare waits after verifying {name}")
            # A rejected candidate's runner is not kept: its process is the
            # spare it took, already seen.
            ran = dict(mem["runner_pids"]).get(name, spare if not v["result"]["passed"] else None)
            self.assertTrue(ran, mem)
            if spare:
                self.assertEqual(ran, spare, f"{name} ran in the spare started during the last verification")
            [spare] = mem["spare_pids"]
            self.assertTrue(spare, mem)
            self.assertNotIn(spare, seen | {ran}, "a spare is a new process, never one a candidate ran in")
            seen |= {p for p in (ran, spare) if p}
        self.assertTrue(verdicts[0]["passed"], verdicts[0])
        self.assertFalse(verdicts[1]["passed"], "a wrong kernel verified in a spare is still rejected")
        self.assertEqual(verdicts[1]["failure"], "correctness")
        self.assertTrue(verdicts[2]["passed"], verdicts[2])
        self.assertFalse(verdicts[3]["passed"])
        self.assertNotEqual(verdicts[3]["failure"], "static", "rejected after its import, in the spare")
        # Timing after a verification: the spare is settled first, and kept.
        b = w.request("bench", problem_id=pid, target="kernel", candidate_path=paths[0], warmup_ms=1, rep_ms=5)
        self.assertTrue(b["ok"], b)
        self.assertGreater(b["result"]["median_ms"], 0)
        self.assertEqual(self._memory(w)["spare_pids"], [spare])
        # Unloading the problem closes its spare.
        self.assertTrue(w.request("unload_problem", problem_id=pid)["ok"])
        self.assertEqual(self._memory(w)["spares"], 0)

    def test_off(self) -> None:
        w = self._worker("0")
        pid = self._load(w)
        v = w.request("verify", problem_id=pid, require_triton=False,
                      candidate_path=os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py"))
        self.assertTrue(v["ok"] and v["result"]["passed"], v)
        self.assertEqual(self._memory(w)["spares"], 0)


if __name__ == "__main__":
    unittest.main()
