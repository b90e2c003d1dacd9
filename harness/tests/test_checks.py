"""Each verification check, failed by a purpose-built candidate (in process).

The adversarial suite (test_suite) covers the same ground through a real
worker; these tests pin the details: reasons, options, ordering.
"""

from __future__ import annotations

import os
import time
import unittest
import unittest.mock

import torch

from kagent_harness import banlist
from kagent_harness.guard import Guard
from kagent_harness.verify import VerifyOptions, verify
from tests.helpers import ADD_RELU, TempFilesCase
from tests.worker_client import TESTDATA_DIR

CPU = VerifyOptions(require_triton=False, check_launch=False)

GOOD = """
import torch

def kernel_function(x, y):
    s = x + y
    return s * (s > 0).to(s.dtype)
"""


class ChecksTest(TempFilesCase):
    def run_verify(self, candidate: str, problem=None, opts: VerifyOptions = CPU):
        problem = problem or self.problem()
        result, cand = verify(problem, self.write(candidate), opts, self.guard)
        return result, cand

    def run_past_static(self, candidate: str):
        """Verify with the static check passing everything: the runtime guard
        under test is the layer behind it (the static check now refuses these
        candidates on its own, see test_static_check)."""
        from kagent_harness import verify as verify_module
        from kagent_harness.static_check import Result

        with unittest.mock.patch.object(verify_module, "check_source",
                                        lambda *a, **k: Result(True, [], True, ["kernel_function"])):
            self.guard = Guard()  # its baseline holds the stand-in
            return self.run_verify(candidate)

    def assertFails(self, result, name: str, fragment: str = "") -> None:
        self.assertFalse(result["passed"], result)
        self.assertEqual(result["failure"], name, result["reason"])
        self.assertNotIn("\n", result["reason"])
        self.assertTrue(result["reason"])
        if fragment:
            self.assertIn(fragment, result["reason"])
        last = result["checks"][-1]
        self.assertEqual(last["name"], name)
        self.assertFalse(last["passed"])

    def test_pass_returns_candidate(self) -> None:
        result, cand = self.run_verify(GOOD)
        self.assertTrue(result["passed"], result)
        self.assertIsNotNone(cand)
        self.assertEqual(result["entry"], "kernel_function")
        self.assertEqual(result["max_abs_err"], 0.0)

    def test_static(self) -> None:
        result, cand = self.run_verify("import torch\ndef kernel_function(x, y):\n    return torch.mm(x, y.t())\n")
        self.assertFails(result, "static", "torch.mm")
        self.assertIsNone(cand)

    def test_import(self) -> None:
        result, _ = self.run_verify("import torch\nraise RuntimeError('boom at import')\n")
        self.assertFails(result, "import", "boom at import")

    def test_import_system_exit(self) -> None:
        result, _ = self.run_verify("import sys\nsys.exit(4)\n")
        self.assertFails(result, "import", "SystemExit(4)")

    def test_entry_missing(self) -> None:
        result, _ = self.run_verify("def helper(x, y):\n    return x\n")
        self.assertFails(result, "entry", "kernel_function")

    def test_entry_modelnew_constructor_raises(self) -> None:
        src = """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                raise ValueError("bad config")
        """
        result, _ = self.run_verify(src)
        self.assertFails(result, "entry", "bad config")

    def test_modelnew_preferred_and_weights_loaded(self) -> None:
        problem_src = """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.scale = nn.Parameter(torch.randn(c))
                self.register_buffer("shift", torch.randn(c))
            def forward(self, x):
                return x * self.scale + self.shift
        C = 8
        def get_inputs():
            return [torch.randn(4, C)]
        def get_init_inputs():
            return [C]
        """
        cand = """
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self, c):
                super().__init__()
                # Deliberately different initial values: the harness loads Model's.
                self.scale = nn.Parameter(torch.zeros(c))
                self.register_buffer("shift", torch.zeros(c))
            def forward(self, x):
                return x * self.scale + self.shift
        def kernel_function(x, c):
            return x
        """
        result, _ = self.run_verify(cand, self.problem(problem_src))
        self.assertTrue(result["passed"], result)
        self.assertEqual(result["entry"], "ModelNew")

    def test_correctness_tolerance_override(self) -> None:
        cand = """
        import torch
        def kernel_function(x, y):
            s = x + y
            return s * (s > 0).to(s.dtype) * (1 + 1e-3)
        """
        result, _ = self.run_verify(cand)
        self.assertFails(result, "correctness", "atol=0.0001")
        result, _ = self.run_verify(cand, self.problem(atol=1e-2, rtol=1e-2))
        self.assertTrue(result["passed"], result)

    def test_correctness_tiny_outputs(self) -> None:
        problem_src = ADD_RELU.replace("return torch.relu(x + y)", "return torch.relu(x + y) * 1e-7")
        result, _ = self.run_verify("import torch\ndef kernel_function(x, y):\n    return torch.zeros_like(x)\n",
                                    self.problem(problem_src))
        self.assertFails(result, "correctness", "relative L2 error")

    def test_correctness_nan_is_unwritten_output(self) -> None:
        cand = """
        import torch
        def kernel_function(x, y):
            out = torch.empty_like(x)
            out[1:] = torch.relu(x + y)[1:]
            return out
        """
        result, _ = self.run_verify(cand)
        self.assertFails(result, "unwritten_output", "index [0, 0]")

    def test_new_empty_is_poisoned_too(self) -> None:
        cand = """
        import torch
        def kernel_function(x, y):
            out = x.new_empty(x.shape)
            out[:-1] = torch.relu(x + y)[:-1]
            return out
        """
        result, _ = self.run_verify(cand)
        self.assertFails(result, "unwritten_output")

    def test_structure(self) -> None:
        result, _ = self.run_verify("def kernel_function(x, y):\n    return (x, y)\n")
        self.assertFails(result, "correctness", "expected a Tensor")
        result, _ = self.run_verify("def kernel_function(x, y):\n    return (x + y)[:, :4]\n")
        self.assertFails(result, "correctness", "shape")

    def test_input_mutation_and_allow_inplace(self) -> None:
        cand = """
        import torch
        def kernel_function(x, y):
            x.add_(y)
            x.mul_((x > 0).to(x.dtype))
        """
        result, _ = self.run_verify(cand)
        # Returning None is not an output unless in-place is allowed.
        self.assertFails(result, "correctness", "None")
        result, _ = self.run_verify(cand, self.problem(allow_inplace=True))
        self.assertTrue(result["passed"], result)
        skipped = [c for c in result["checks"] if c["name"] == "input_mutation"][0]
        self.assertTrue(skipped["skipped"])

    def test_determinism_and_atomics(self) -> None:
        cand = """
        import torch
        _n = [0]
        def kernel_function(x, y):
            _n[0] += 1
            s = x + y
            return s * (s > 0).to(s.dtype) * (1 + 1e-6 * (_n[0] % 2))
        """
        result, _ = self.run_verify(cand)
        self.assertFails(result, "determinism", "atomics")
        result, _ = self.run_verify(cand, self.problem(atomics=True))
        self.assertTrue(result["passed"], result)

    def test_extra_shapes_exception_is_named_extra_shapes(self) -> None:
        cand = """
        import torch
        def kernel_function(x, y):
            if x.shape[0] != 16:
                raise ValueError("only 16 rows supported")
            s = x + y
            return s * (s > 0).to(s.dtype)
        """
        result, _ = self.run_verify(cand, self.problem(shapes=[{"N": 24}]))
        self.assertFails(result, "extra_shapes", "{N: 24}")

    def test_caching(self) -> None:
        cand = """
        import torch
        _memo = {}
        def kernel_function(x, y):
            key = (x.data_ptr(), y.data_ptr())
            if key not in _memo:
                s = x + y
                _memo[key] = s * (s > 0).to(s.dtype)
            return _memo[key]
        """
        result, _ = self.run_verify(cand)
        self.assertFails(result, "caching", "previous result")

    def test_result_looked_up_by_part_of_the_input_is_caching(self) -> None:
        from kagent_harness import verify as verify_module

        # Keyed on the shape and the first values (or any sample of positions
        # the kernel can read cheaply): right on every draw and on refilled
        # buffers, wrong on draw 1's inputs with a few elements changed.
        for key in ("tuple(x.reshape(-1)[:16].tolist())", "tuple(x.reshape(-1)[::64].tolist())"):
            with self.subTest(key=key):
                cand = f"""
                import torch
                _memo = {{}}
                def kernel_function(x, y):
                    key = (tuple(x.shape), {key})
                    if key not in _memo:
                        s = x + y
                        _memo[key] = s * (s > 0).to(s.dtype)
                    return _memo[key].clone()
                """
                # Positions outside both keys' samples (the choice is random in use).
                with unittest.mock.patch.object(verify_module._rng, "sample", lambda pop, k: [17, 33, 50, 99][:k]):
                    result, _ = self.run_verify(cand)
                self.assertFails(result, "caching", "not looked up by a part of it")

    def test_honest_kernel_passes_the_changed_in_part_call(self) -> None:
        result, _ = self.run_verify(GOOD)
        self.assertTrue(result["passed"], result.get("reason"))
        note = next(c["reason"] for c in result["checks"] if c["name"] == "caching")
        self.assertIn("element(s) changed give their own result", note)

    def test_reused_output_buffer(self) -> None:
        cand = """
        import torch
        _out = []
        def kernel_function(x, y):
            if not _out:
                _out.append(torch.empty_like(x))
            s = x + y
            _out[0].copy_(s * (s > 0).to(s.dtype))
            return _out[0]
        """
        result, _ = self.run_verify(cand)
        self.assertFails(result, "caching", "same buffer")

    def test_exception_and_oom(self) -> None:
        result, _ = self.run_verify("def kernel_function(x, y):\n    raise KeyError('blk')\n")
        self.assertFails(result, "exception", "KeyError")
        result, _ = self.run_verify("def kernel_function(x, y):\n    raise MemoryError()\n")
        self.assertFails(result, "oom")

    def test_user_test(self) -> None:
        tests = os.path.join(TESTDATA_DIR, "problems", "add_relu")
        problem_path = os.path.join(tests, "problem.py")
        good = os.path.join(TESTDATA_DIR, "candidates", "cpu", "add_relu_ok.py")
        from kagent_harness.loading import load_problem

        for test_name, expect in (("test_pass.py", True), ("test_fail.py", False)):
            with self.subTest(test_name):
                problem = load_problem(
                    {"problem_path": problem_path, "seeds": [1, 2, 3], "test_path": os.path.join(tests, test_name)},
                    self.device, "u",
                )
                result, _ = verify(problem, good, CPU, self.guard)
                if expect:
                    self.assertTrue(result["passed"], result)
                else:
                    self.assertFails(result, "user_test", "status 3")

    def test_user_test_leaves_nothing_running(self) -> None:
        from kagent_harness.usertest import run_sources

        pid_file = os.path.join(self.dir, "child.pid")
        test = ("import subprocess, sys\n"
                "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
                f"open({pid_file!r}, 'w').write(str(p.pid))\n")
        ok, reason = run_sources(test, "", "", 60.0)
        self.assertTrue(ok, reason)
        with open(pid_file, encoding="ascii") as f:
            pid = int(f.read())
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            # A zombie is gone for good; only a live process counts.
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
            time.sleep(0.05)
        self.fail("a process the user test started outlived it")

    def test_user_test_timeout(self) -> None:
        test = self.write("import time\ntime.sleep(60)\n", "slow_test.py")
        problem = self.problem(test_path=test)
        opts = VerifyOptions(require_triton=False, check_launch=False, test_timeout_s=1.0)
        result, _ = verify(problem, self.write(GOOD), opts, self.guard)
        self.assertFails(result, "user_test", "within 1 s")

    def test_tamper_during_call_is_fatal(self) -> None:
        # In the judge's own process (KAGENT_INPROCESS=1), the guard, checked
        # after every call, sees the patch, and the process is no longer
        # trusted. In a runner (the default) the patch is the runner's: the
        # candidate fails, the judge stays trusted.
        for inprocess, fatal in (("1", True), ("", False)):
            with self.subTest(inprocess=inprocess), unittest.mock.patch.dict(os.environ, {"KAGENT_INPROCESS": inprocess}):
                self.guard = Guard()
                self._tamper_during_call(fatal)

    def _tamper_during_call(self, fatal: bool) -> None:
        cand = """
        import time
        import torch
        def _swap(mod, value):
            holder = mod
            holder.perf_counter = value
        def kernel_function(x, y):
            _swap(time, lambda: 0.0)
            s = x + y
            return s * (s > 0).to(s.dtype)
        """
        import time

        saved = time.perf_counter
        try:
            result, _ = self.run_past_static(cand)
        finally:
            time.perf_counter = saved
        self.assertFails(result, "tamper", "time.perf_counter")
        self.assertEqual(result["fatal"], fatal)

    def test_replacing_a_poisoned_allocator_is_tamper(self) -> None:
        cand = """
        import torch
        def _swap(mod):
            holder = mod
            holder.empty_like = holder.zeros_like
        def kernel_function(x, y):
            _swap(torch)
            s = x + y
            return s * (s > 0).to(s.dtype)
        """
        saved = torch.empty_like
        try:
            result, _ = self.run_past_static(cand)
        finally:
            torch.empty_like = saved
        self.assertFails(result, "tamper", "empty_like")

    def test_copies_released_as_soon_as_checked(self) -> None:
        # What is still alive when each call starts: the memory policy of
        # PROTOCOL.md (Memory). Draw 1's input copy stays for the caching check,
        # every draw's output until all draws ran; the rest goes at once.
        cand = """
        import weakref
        import torch
        refs = []
        alive = []
        def kernel_function(x, y):
            alive.append([r() is not None for r in refs])
            s = x + y
            out = s * (s > 0).to(s.dtype)
            refs.extend([weakref.ref(x), weakref.ref(out)])
            return out
        """
        # weakref observes the harness here; kernels may not import it. The
        # candidate must share the judge's process to see its memory.
        banlist.ALLOWED_IMPORTS.add("weakref")
        try:
            os.environ["KAGENT_INPROCESS"] = "1"
            self.guard = Guard()
            result, c = self.run_verify(cand)
        finally:
            banlist.ALLOWED_IMPORTS.discard("weakref")
            os.environ.pop("KAGENT_INPROCESS", None)
        self.assertTrue(result["passed"], result)
        alive = c.module.alive
        x1, o1, x2, o2 = True, True, False, True
        self.assertEqual(alive[1], [x1, o1])  # draw 2
        self.assertEqual(alive[2], [x1, o1, x2, o2])  # draw 3: draw 2's input copy is gone
        self.assertEqual(alive[3], [x1, o1, False, False, False, False])  # determinism run: draws 2, 3 gone
        self.assertEqual(alive[4][:2], [True, False])  # caching run: draw 1's buffers, no outputs
        self.assertFalse(any(alive[4][2:]))

    def test_stale_result_on_a_reused_address_is_caching(self) -> None:
        # The allocator may hand a later draw the address of a freed copy: a
        # kernel caching by pointer then returns an earlier draw's result, which
        # is named caching, not correctness.
        cand = """
        import torch
        _memo = {}
        def kernel_function(x, y):
            key = x.shape
            if key not in _memo:
                s = x + y
                _memo[key] = s * (s > 0).to(s.dtype)
            return _memo[key].clone()
        """
        result, _ = self.run_verify(cand)
        self.assertFails(result, "caching", "previous result of draw 1 for the inputs of draw 2")

    def test_references_intact(self) -> None:
        problem = self.problem()
        from kagent_harness.loading import references_intact

        self.assertIsNone(references_intact(problem))
        problem.draws[0].ref.add_(1)
        self.assertIn("draw 1", references_intact(problem) or "")


if __name__ == "__main__":
    unittest.main()


class WeightsMismatchTest(unittest.TestCase):
    """ModelNew's weights are loaded from Model's state_dict: names either
    side lacks are named in the reason, in the judge and in a runner alike."""

    def test_names_what_each_side_lacks(self) -> None:
        from kagent_harness.candidate import weights_mismatch

        new = torch.nn.Linear(2, 2)
        result = new.load_state_dict({"weight": torch.zeros(2, 2), "scale": torch.ones(1)}, strict=False)
        reason = weights_mismatch("kernel.py", result)
        self.assertIn("Model has ['scale'] which ModelNew lacks", reason)
        self.assertIn("ModelNew has ['bias'] which Model lacks", reason)
        self.assertTrue(reason.startswith("kernel.py: ModelNew's parameters/buffers must carry the same names"))
        full = new.load_state_dict({"weight": torch.zeros(2, 2), "bias": torch.zeros(2)}, strict=False)
        self.assertEqual(weights_mismatch("kernel.py", full), "")
