"""The tamper guard and the poisoned allocations."""

from __future__ import annotations

import builtins
import math
import time
import unittest

import torch

from kagent_harness import numerics, timing, verify  # imported before any Guard, as in the worker
from kagent_harness.failures import CheckFailure
from kagent_harness.guard import Guard
from kagent_harness.launches import LaunchCounter
from kagent_harness.poison import poisoned_allocations


class GuardTest(unittest.TestCase):
    def setUp(self) -> None:
        self.guard = Guard()

    def test_clean(self) -> None:
        self.assertIsNone(self.guard.check())
        torch.zeros(3).sum()  # ordinary work changes nothing watched
        self.assertIsNone(self.guard.check())

    def _patched(self, owner, name, value) -> str:
        saved = getattr(owner, name)
        setattr(owner, name, value)
        try:
            return self.guard.check() or ""
        finally:
            setattr(owner, name, saved)

    def test_detects_a_thread_count_change(self) -> None:
        saved = torch.get_num_threads()
        torch.set_num_threads(saved + 1)
        try:
            self.assertIn("torch.get_num_threads()", self.guard.check() or "")
        finally:
            torch.set_num_threads(saved)
        self.assertIsNone(self.guard.check())

    def test_detects_patches(self) -> None:
        self.assertIn("torch.allclose", self._patched(torch, "allclose", lambda *a, **k: True))
        self.assertIn("time.perf_counter", self._patched(time, "perf_counter", lambda: 0.0))
        self.assertIn("time.process_time", self._patched(time, "process_time", lambda: 0.0))
        self.assertIn("torch.Tensor.__eq__", self._patched(torch.Tensor, "__eq__", lambda a, b: True))
        self.assertIn("torch.testing.assert_close", self._patched(torch.testing, "assert_close", lambda *a: None))
        self.assertIn("builtins.abs", self._patched(builtins, "abs", lambda x: 0))
        self.assertIn("math.isfinite", self._patched(math, "isfinite", lambda x: True))
        if hasattr(torch, "cuda"):
            self.assertIn("torch.cuda.synchronize", self._patched(torch.cuda, "synchronize", lambda *a: None))
            # The figure a runner reports for the leak check (timing.leak_reason).
            self.assertIn("torch.cuda.memory_allocated", self._patched(torch.cuda, "memory_allocated", lambda *a: 0))
        self.assertIsNone(self.guard.check())

    def test_detects_harness_patch(self) -> None:
        msg = self._patched(numerics, "compare_outputs", lambda *a, **k: None)
        self.assertIn("kagent_harness.numerics.compare_outputs", msg)

    def test_detects_harness_class_and_constant_changes(self) -> None:
        msg = self._patched(timing._Timer, "finish", lambda self, marks: None)
        self.assertIn("kagent_harness.timing._Timer.finish", msg)
        self.assertIn("kagent_harness.verify._Run.run", self._patched(verify._Run, "run", lambda self: None))
        # A constant replaced, or a table changed in place.
        self.assertIn("REL_L2_CAP (a harness constant)", self._patched(numerics, "REL_L2_CAP", 1e30))
        table = numerics.DEFAULT_TOLERANCE
        key = next(iter(table))
        saved = table[key]
        table[key] = (1e30, 1e30)
        try:
            self.assertIn("DEFAULT_TOLERANCE (a harness constant)", self.guard.check() or "")
        finally:
            table[key] = saved
        self.assertIsNone(self.guard.check())

    def test_detects_torch_functions_and_operators_the_harness_uses(self) -> None:
        self.assertIn("torch.dot", self._patched(torch, "dot", lambda *a: torch.zeros(())))
        self.assertIn("torch.stack", self._patched(torch, "stack", lambda *a, **k: None))
        self.assertIn("torch.Tensor.__rsub__", self._patched(torch.Tensor, "__rsub__", lambda a, b: a))
        self.assertIsNone(self.guard.check())

    def test_detects_candidate_threads(self) -> None:
        import concurrent.futures
        import threading

        stop = threading.Event()
        t = threading.Thread(target=stop.wait, name="sneaky")
        t.start()
        try:
            msg = self.guard.check() or ""
            self.assertIn("a thread was started by", msg)
            self.assertIn("test_guard.py", msg)
        finally:
            stop.set()
            t.join()
        self.guard.reset()
        # A pool's workers run standard-library code, but the pool was started here.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(lambda: None).result()
            self.assertIn("test_guard.py", self.guard.check() or "")
        self.guard.reset()

    def test_accepts_threads_of_trusted_code(self) -> None:
        import threading

        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        try:
            self.assertIn("a thread was started by", self.guard.check() or "")
            self.guard.accept_threads()  # e.g. the reference problem's module started it
            self.assertIsNone(self.guard.check())
        finally:
            stop.set()
            t.join()

    def test_accepts_library_threads(self) -> None:
        import os
        import threading

        # Code whose file is in torch's package starts a thread: torch's own
        # thread (as inductor's compile workers are), not the candidate's.
        lib = os.path.join(os.path.dirname(torch.__file__), "kagent_fake_lib.py")
        src = "import threading\ndef run(ev):\n    ev.wait()\ndef spawn(ev):\n    t = threading.Thread(target=run, args=(ev,))\n    t.start()\n    return t\n"
        ns: dict = {}
        exec(compile(src, lib, "exec"), ns)
        ev = threading.Event()
        t = ns["spawn"](ev)
        try:
            self.assertIsNone(self.guard.check())
            self.assertIsNone(self.guard.check())
        finally:
            ev.set()
            t.join()
        # So is a package installed beside torch (tqdm's monitor thread).
        installed = os.path.join(os.sep, "tmp", "kagent-venv", "lib", "site-packages", "fakepkg", "monitor.py")
        ns = {}
        exec(compile(src, installed, "exec"), ns)
        ev = threading.Event()
        t = ns["spawn"](ev)
        try:
            self.assertIsNone(self.guard.check())
        finally:
            ev.set()
            t.join()

    def test_lazy_dynamo_import_is_not_tampering(self) -> None:
        try:
            import torch._dynamo  # noqa: F401 - rebinds torch.manual_seed on first import
        except Exception:  # noqa: BLE001 - torch without dynamo
            self.skipTest("no torch._dynamo")
        self.assertIsNone(self.guard.check())

    def test_detects_new_builtin(self) -> None:
        builtins.kagent_sneaky = 1  # type: ignore[attr-defined]
        try:
            self.assertIn("was added", self.guard.check() or "")
        finally:
            del builtins.kagent_sneaky  # type: ignore[attr-defined]

    def test_detects_tf32_change_and_expected_policy(self) -> None:
        saved = torch.backends.cudnn.allow_tf32
        try:
            torch.backends.cudnn.allow_tf32 = not saved
            self.assertIn("allow_tf32", self.guard.check() or "")
            self.guard.expect_tf32("allow" if not saved else "forbid")
            torch.backends.cuda.matmul.allow_tf32 = not saved
            self.assertIsNone(self.guard.check())
        finally:
            torch.backends.cudnn.allow_tf32 = saved
            torch.backends.cuda.matmul.allow_tf32 = False

    def test_classmethod_identity_is_stable(self) -> None:
        # Tensor.__torch_function__ is a classmethod: a new bound method per access.
        self.assertIsNone(self.guard.check())
        self.assertIsNone(self.guard.check())


class RunnerGuardTest(unittest.TestCase):
    """A runner's guard (dynamo=False) in a process that has not imported
    torch._dynamo: its later import (which wraps torch.manual_seed) is no
    change; replacing torch.manual_seed still is."""

    SCRIPT = """
import sys
import torch
from kagent_harness.guard import Guard
assert "torch._dynamo" not in sys.modules, "torch._dynamo was imported before the guard"
g = Guard(dynamo=False)
assert "torch._dynamo" not in sys.modules, "the runner's guard imported torch._dynamo"
import torch._dynamo
assert torch.manual_seed.__wrapped__ is torch.random.manual_seed
assert g.check() is None, g.check()
torch.manual_seed = lambda seed: None
print(g.check())
"""

    def test_lazy_dynamo_import_is_not_a_change(self) -> None:
        import os
        import subprocess
        import sys

        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=here)
        r = subprocess.run([sys.executable, "-c", self.SCRIPT], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("torch.manual_seed was replaced", r.stdout)


class PoisonTest(unittest.TestCase):
    def test_empty_family_is_nan_inside_only(self) -> None:
        originals = (torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty)
        with poisoned_allocations():
            a = torch.empty(4)
            b = torch.empty_like(a)
            c = torch.empty_strided((2, 2), (2, 1))
            d = a.new_empty((3,))
            e = torch.empty(3, dtype=torch.int32)
            f = torch.empty(2, dtype=torch.bool)
        for t in (a, b, c, d):
            self.assertTrue(torch.isnan(t).all(), t)
        self.assertEqual(int(e[0]), torch.iinfo(torch.int32).max)
        self.assertTrue(bool(f.all()))
        self.assertEqual((torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty), originals)

    def test_replacing_a_wrapper_is_reported_and_undone(self) -> None:
        original = torch.empty
        with self.assertRaises(CheckFailure) as ctx:
            with poisoned_allocations():
                torch.empty = torch.zeros  # type: ignore[assignment]
        self.assertEqual(ctx.exception.name, "tamper")
        self.assertIs(torch.empty, original)

    def test_requires_grad_leaf(self) -> None:
        with poisoned_allocations():
            t = torch.empty(3, requires_grad=True)
        self.assertTrue(torch.isnan(t.detach()).all())


class LaunchCounterTest(unittest.TestCase):
    def test_without_triton_counts_nothing_and_restores(self) -> None:
        with LaunchCounter() as counter:
            pass
        self.assertEqual(counter.count, 0)


if __name__ == "__main__":
    unittest.main()
