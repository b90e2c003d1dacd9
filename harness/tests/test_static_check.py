"""The static checker on a table of snippets, banned and allowed."""

from __future__ import annotations

import glob
import json
import os
import re
import textwrap
import unittest

from kagent_harness import banlist
from kagent_harness.static_check import check_file, check_source
from tests.static_bypasses import BYPASSES

TRITON_HEADER = """
import torch
import triton
import triton.language as tl

@triton.jit
def _k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.sum(v, axis=0) + v.max(), mask=offs < n)
"""



def T(snippet: str) -> str:
    """A snippet after a Triton kernel definition."""
    return TRITON_HEADER + textwrap.dedent(snippet)


# (name, source, require_triton, expected fragment of the reason or None for "passes")
CASES = [
    # --- imports: an allow-list ---
    ("standard helpers may be imported", """
        from __future__ import annotations
        import math, functools, itertools, operator, os, sys, typing, dataclasses, collections
        from typing import List
        import torch
        def kernel_function(x):
            return x * math.sqrt(2.0)
        """, False, None),
    ("pydoc reaches objects by name", """
        import pydoc
        def kernel_function(x):
            return pydoc.locate("torch.relu")(x)
        """, False, "imports pydoc: a kernel may import only"),
    ("unittest.mock patches by name", """
        from unittest import mock
        def kernel_function(x):
            return x
        """, False, "imports unittest: a kernel may import only"),
    ("string.Formatter.get_field reaches attributes", """
        import string
        def kernel_function(x):
            return string.Formatter().get_field("0.relu", (x,), {})[0]()
        """, False, "imports string: a kernel may import only"),
    ("traceback walks the stack", """
        from traceback import walk_stack
        def kernel_function(x):
            return x
        """, False, "imports traceback: a kernel may import only"),
    ("reduction through sum_to_size", """
        import torch
        def kernel_function(x):
            return x.sum_to_size(x.shape[0], 1)
        """, False, "sum_to_size"),
    ("reduction through index_add_", """
        import torch
        def kernel_function(x):
            out = torch.zeros(1, x.shape[1])
            return out.index_add_(0, torch.zeros(x.shape[0], dtype=torch.long), x)
        """, False, "index_add_"),
    # --- allowed ---
    ("plain elementwise", """
        import torch
        def kernel_function(x, y):
            out = torch.empty_like(x)
            out.copy_(torch.where(x > 0, x, y) * 2 + torch.exp(y))
            return out.view(-1).reshape(x.shape).contiguous()
        """, False, None),
    ("triton kernel with tl reductions and methods", T("""
        def kernel_function(x):
            n = x.numel()
            _k[(triton.cdiv(n, 128),)](x, n, BLOCK=128)
            return x
        """), True, None),
    ("finfo max is not a reduction", """
        import torch
        def kernel_function(x):
            big = torch.finfo(x.dtype).max
            return torch.clamp(x, max=big)
        """, False, None),
    ("self attribute named min", """
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self, lo, hi):
                super().__init__()
                self.min = lo
                self.max = hi
            def forward(self, x):
                return torch.clamp(x, self.min, self.max)
        """, False, None),
    ("math.prod and python builtins", """
        import math
        import torch
        def kernel_function(x):
            n = math.prod(x.shape)
            m = max(n, 1) + sum([1, 2])
            return x * (m / m)
        """, False, None),
    ("nn.Linear as a parameter holder", """
        import torch
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self, a, b):
                super().__init__()
                self.linear = nn.Linear(a, b)
            def forward(self, x):
                return x[:, :1] * self.linear.weight[:, 0]
        """, False, None),
    ("unused functional import", """
        import torch
        import torch.nn.functional as F
        def kernel_function(x):
            return x + 1
        """, False, None),
    ("main block may test with torch ops", """
        import torch
        def kernel_function(x):
            return x + 1
        if __name__ == "__main__":
            a = torch.rand(4, 4)
            assert torch.allclose(kernel_function(a), a + 1)
            print(torch.matmul(a, a).sum())
        """, False, None),
    ("dead helper is not checked", """
        import torch
        def _unused(a, b):
            return torch.matmul(a, b)
        def kernel_function(x):
            return x + 1
        """, False, None),
    ("environ read", """
        import os
        import torch
        def kernel_function(x):
            if os.environ.get("TRITON_INTERPRET") == "1":
                return x + 1
            return x + 1
        """, False, None),
    ("elementwise torch allowed on cpu", """
        import torch
        def kernel_function(x):
            return torch.relu(torch.sigmoid(x)) + torch.rsqrt(x.abs() + 1)
        """, False, None),
    # --- banned ---
    ("syntax error", "def kernel_function(x)\n    return x\n", False, "syntax error"),
    ("no triton kernel", """
        import torch
        def kernel_function(x):
            return x + 1
        """, True, "no @triton.jit"),
    ("torch.matmul", """
        import torch
        def kernel_function(a, b):
            return torch.matmul(a, b)
        """, False, "torch.matmul"),
    ("functional alias Q", """
        import torch.nn.functional as Q
        def kernel_function(x):
            return Q.relu(x)
        """, False, "torch.nn.functional.relu"),
    ("from torch.nn import functional", """
        from torch.nn import functional as F
        def kernel_function(x):
            return F.softmax(x, dim=-1)
        """, False, "torch.nn.functional.softmax"),
    ("from torch import matmul as mm", """
        from torch import matmul as mm
        def kernel_function(a, b):
            return mm(a, b)
        """, False, "torch.matmul"),
    ("matmul operator in helper", """
        import torch
        def _h(a, b):
            return a @ b
        def kernel_function(a, b):
            return _h(a, b)
        """, False, "@ operator"),
    ("matmul in-place operator", """
        import torch
        def kernel_function(a, b):
            a @= b
            return a
        """, False, "@= operator"),
    ("getattr with computed name", """
        import torch
        def kernel_function(a, b):
            return getattr(torch, 'mat' + 'mul')(a, b)
        """, False, "computed name"),
    ("getattr with constant name", """
        import torch
        def kernel_function(a, b):
            return getattr(torch, 'matmul')(a, b)
        """, False, "torch.matmul"),
    ("getattr of a tensor method", """
        import torch
        def kernel_function(x):
            return getattr(x, 'sum')()
        """, False, ".sum()"),
    ("getattr passed as a value", """
        import functools
        import torch
        def kernel_function(x):
            f = functools.reduce(getattr, ["sum"], x)
            return f()
        """, False, "getattr used as a value"),
    ("tensor sum method", """
        def kernel_function(x):
            return x.sum(dim=1)
        """, False, ".sum()"),
    ("bound method reference", """
        def kernel_function(x):
            f = x.amax
            return f(dim=0)
        """, False, ".amax()"),
    ("torch.Tensor.sum unbound", """
        import torch
        def kernel_function(x):
            return torch.Tensor.sum(x)
        """, False, "torch.Tensor.sum"),
    ("module alias by assignment", """
        import torch
        T = torch
        def kernel_function(a, b):
            return T.bmm(a, b)
        """, False, "torch is a module used as a value"),
    ("op alias by assignment", """
        import torch
        _mm = torch.mm
        def kernel_function(a, b):
            return _mm(a, b)
        """, False, "torch.mm"),
    ("ops in a table", """
        import torch
        OPS = {"mm": torch.mm}
        def kernel_function(a, b):
            return OPS["mm"](a, b)
        """, False, "torch.mm"),
    ("aten", """
        import torch
        def kernel_function(a, b):
            return torch.ops.aten.addmm(a, a, b)
        """, False, "torch.ops.aten"),
    ("private torch", """
        import torch
        def kernel_function(x):
            return torch._C._nn.gelu(x)
        """, False, "private"),
    ("torch.compile", """
        import torch
        def kernel_function(x):
            return torch.compile(lambda t: t + 1)(x)
        """, False, "torch.compile"),
    ("torch.compile as decorator", """
        import torch
        @torch.compile
        def kernel_function(x):
            return x + 1
        """, False, "torch.compile"),
    ("inductor import", """
        import torch._inductor
        def kernel_function(x):
            return x
        """, False, None),  # importing is fine; using it is not (next case)
    ("inductor use", """
        import torch
        def kernel_function(x):
            return torch._inductor.compile(x)
        """, False, "private"),
    ("cuda stream", """
        import torch
        def kernel_function(x):
            with torch.cuda.stream(torch.cuda.Stream()):
                return x + 1
        """, False, "stream"),
    ("threading", """
        import threading
        def kernel_function(x):
            return x
        """, False, "threading"),
    ("multiprocessing in function", """
        def kernel_function(x):
            import multiprocessing
            return x
        """, False, "multiprocessing"),
    ("ctypes", """
        import ctypes
        def kernel_function(x):
            return x
        """, False, "ctypes"),
    ("subprocess", """
        import subprocess
        def kernel_function(x):
            subprocess.run(["true"])
            return x
        """, False, "subprocess"),
    ("importlib", """
        import importlib
        def kernel_function(x):
            return importlib.import_module("torch").relu(x)
        """, False, "importlib"),
    ("__import__", """
        def kernel_function(x):
            return __import__("torch").relu(x)
        """, False, "__import__"),
    ("eval", """
        import torch
        def kernel_function(x):
            return eval("torch.relu")(x)
        """, False, "eval"),
    ("sys.modules write", """
        import sys
        sys.modules["kagent_harness"] = None
        def kernel_function(x):
            return x
        """, False, "sys.modules"),
    ("os.environ write", """
        import os
        def kernel_function(x):
            os.environ["X"] = "1"
            return x
        """, False, "os.environ"),
    ("os.environ update", """
        import os
        def kernel_function(x):
            os.environ.update({"X": "1"})
            return x
        """, False, "os.environ"),
    ("sys.argv", """
        import sys
        def kernel_function(x):
            return x if len(sys.argv) > 1 else x + 1
        """, False, "sys.argv"),
    ("from sys import argv", """
        from sys import argv
        def kernel_function(x):
            return x if argv else x + 1
        """, False, "sys.argv"),
    ("sys._getframe", """
        import sys
        def kernel_function(x):
            return sys._getframe(1).f_locals["ref"]
        """, False, "sys._getframe"),
    ("inspect", """
        import inspect
        def kernel_function(x):
            return inspect.stack()[1]
        """, False, "inspect"),
    ("gc", """
        import gc
        def kernel_function(x):
            return gc.get_objects()
        """, False, "gc"),
    ("builtins tampering", """
        import builtins
        builtins.print = None
        def kernel_function(x):
            return x
        """, False, "builtins"),
    ("__builtins__", """
        __builtins__["len"] = None
        def kernel_function(x):
            return x
        """, False, "__builtins__"),
    ("monkeypatch torch.allclose", """
        import torch
        torch.allclose = lambda *a, **k: True
        def kernel_function(x):
            return x
        """, False, "assigns torch.allclose"),
    ("monkeypatch time via alias", """
        import time as _t
        clock = _t
        clock.perf_counter = lambda: 0.0
        def kernel_function(x):
            return x
        """, False, "_t is a module used as a value"),
    ("monkeypatch via setattr", """
        import torch
        setattr(torch, "allclose", lambda *a, **k: True)
        def kernel_function(x):
            return x
        """, False, "torch.allclose"),
    ("monkeypatch the allocator's figures (hides a leak)", """
        import torch
        torch.cuda.memory_allocated = lambda *a, **k: 0
        def kernel_function(x):
            return x
        """, False, "assigns torch.cuda.memory_allocated"),
    ("monkeypatch Tensor method", """
        import torch
        torch.Tensor.__eq__ = lambda a, b: True
        def kernel_function(x):
            return x
        """, False, "torch.Tensor.__eq__"),
    ("monkeypatch triton do_bench", """
        import torch
        import triton.testing
        triton.testing.do_bench = lambda *a, **k: 0.001
        def kernel_function(x):
            return x
        """, False, "triton.testing.do_bench"),
    ("tf32 flag write", """
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        def kernel_function(x):
            return x
        """, False, "allow_tf32"),
    ("set_float32_matmul_precision", """
        import torch
        def kernel_function(x):
            torch.set_float32_matmul_precision("medium")
            return x
        """, False, "torch.set_float32_matmul_precision"),
    ("harness import", """
        from kagent_harness import guard
        def kernel_function(x):
            return x
        """, False, "kagent_harness"),
    ("reference import", """
        from problem import Model
        def kernel_function(x):
            return Model()(x)
        """, False, "reference problem"),
    ("reference module by file stem", """
        import myproblem
        def kernel_function(x):
            return myproblem.Model()(x)
        """, False, "reference problem"),
    ("Model name", """
        def kernel_function(x):
            return Model()(x)
        """, False, "reference Model"),
    ("inherits Model", """
        import torch.nn as nn
        class ModelNew(Model):
            pass
        """, False, "inherits"),
    ("calls an nn module", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.GELU()
            def forward(self, x):
                return self.act(x)
        """, False, "self.act"),
    ("constructs and calls an nn module", """
        import torch.nn as nn
        def kernel_function(x):
            return nn.Softmax(dim=1)(x)
        """, False, "Softmax module"),
    ("forward of another module", """
        import torch.nn as nn
        _lin = nn.Linear(4, 4)
        def kernel_function(x):
            return _lin.forward(x)
        """, False, ".forward()"),
    ("tensor subclass", """
        import torch
        class Lazy(torch.Tensor):
            pass
        def kernel_function(x):
            return x.as_subclass(Lazy)
        """, False, "subclasses torch.Tensor"),
    ("torch_function override", """
        import torch
        class Sneaky:
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return True
        def kernel_function(x):
            return Sneaky()
        """, False, "__torch_function__"),
    ("lru_cache on a launch-config helper", """
        import functools
        import torch
        @functools.lru_cache(None)
        def _block(n):
            return 1 << max(4, (n - 1).bit_length())
        def kernel_function(x):
            return x * float(_block(x.shape[-1]) > 0)
        """, False, None),
    ("numpy", """
        import numpy as np
        import torch
        def kernel_function(x):
            return torch.from_numpy(np.sum(x.numpy(), axis=1))
        """, False, "numpy"),
    ("open file descriptor", """
        def kernel_function(x):
            with open(3, "w") as f:
                f.write("{}")
            return x
        """, False, "open"),
    ("os.write", """
        import os
        def kernel_function(x):
            os.write(3, b"{}")
            return x
        """, False, "os.write"),
    ("dunder dict", """
        import torch
        def kernel_function(a, b):
            return torch.__dict__["matmul"](a, b)
        """, False, "__dict__"),
    ("frame walking", """
        def kernel_function(x):
            try:
                raise ValueError
            except ValueError as e:
                return e.__traceback__.tb_frame.f_back.f_locals
        """, False, "frames"),
    ("star import", """
        from torch import *
        def kernel_function(x):
            return x
        """, False, "import *"),
    ("strict relu with triton", T("""
        def kernel_function(x):
            _k[(1,)](x, x.numel(), BLOCK=128)
            return torch.relu(x)
        """), True, "torch.relu computes in PyTorch"),
    ("strict method with triton", T("""
        def kernel_function(x):
            _k[(1,)](x, x.numel(), BLOCK=128)
            return x.exp()
        """), True, ".exp()"),
    ("banned helper reached through a method", """
        import torch
        import torch.nn as nn
        def _norm(x):
            return torch.layer_norm(x, x.shape[-1:])
        class ModelNew(nn.Module):
            def forward(self, x):
                return self._go(x)
            def _go(self, x):
                return _norm(x)
        """, False, "torch.layer_norm"),
    ("helper passed as a callback", """
        import torch
        def _reduce(x):
            return x.mean()
        def _apply(fn, x):
            return fn(x)
        def kernel_function(x):
            return _apply(_reduce, x)
        """, False, ".mean()"),
]

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Every kernel the repo ships that must pass: (glob under the repo, require_triton).
SHIPPED_KERNELS = [
    ("examples/*/input.py", True),
    ("bench/kernelbench/level1/*/kernel.py", True),
    ("docs/results/**/kernel.py", True),
    ("docs/results/**/best_kernel.py", True),
    ("docs/results/**/input.py", True),
    ("sweep/testdata/gpu/kernels/*.py", True),
    ("sweep/testdata/replies/*.py", False),
    ("agent/testdata/relu_scale/input.py", False),
    ("agent/testdata/candidates/*.py", False),
    ("agent/generate/testdata/kernels/good.py", False),
]
# Files among those globs that are meant to fail.
SHIPPED_BANNED = {"agent/testdata/candidates/banned.py"}
# Cheats of the worker suite that the runtime guards also catch (captured allocator,
# patching through a module or class held in a variable).
STATIC_NOW = {"monkeypatch_perf_counter_hidden.py", "tensor_patch_hidden.py", "partial_write_captured_alloc.py"}


class StaticCheckTable(unittest.TestCase):
    def test_table(self) -> None:
        for name, src, require_triton, expected in CASES:
            with self.subTest(name):
                res = check_source(textwrap.dedent(src), require_triton, ["myproblem"])
                if expected is None:
                    self.assertTrue(res.passed, f"{name}: unexpectedly rejected: {res.reason}")
                else:
                    self.assertFalse(res.passed, f"{name}: unexpectedly accepted")
                    joined = " ".join(v.text() for v in res.violations)
                    self.assertIn(expected, joined, f"{name}: {joined}")
                    self.assertNotIn("\n", res.reason)

    def test_bypasses(self) -> None:
        self.assertGreaterEqual(len(BYPASSES), 30)
        for name, src, expected in BYPASSES:
            with self.subTest(name):
                res = check_source(textwrap.dedent(src), False, ["myproblem"])
                self.assertFalse(res.passed, f"{name}: unexpectedly accepted")
                joined = " ".join(v.text() for v in res.violations)
                self.assertIn(expected, joined, f"{name}: {joined}")
                self.assertNotIn("\n", res.reason)

    def test_shipped_kernels_pass(self) -> None:
        seen = 0
        for pattern, require_triton in SHIPPED_KERNELS:
            for path in sorted(glob.glob(os.path.join(REPO, pattern), recursive=True)):
                rel = os.path.relpath(path, REPO)
                with self.subTest(rel):
                    res = check_file(path, require_triton)
                    if rel in SHIPPED_BANNED:
                        self.assertFalse(res.passed, rel)
                    else:
                        self.assertTrue(res.passed, f"{rel}: {res.reason}")
                seen += 1
        self.assertGreater(seen, 20)

    def test_worker_suite_candidates(self) -> None:
        # The static verdict of every candidate of testdata/suite.json agrees with
        # what the suite expects of it (pass static unless it expects fail:static).
        root = os.path.join(REPO, "platform", "worker", "testdata")
        with open(os.path.join(root, "suite.json"), encoding="utf-8") as f:
            entries = json.load(f)
        for e in entries:
            path = os.path.join(root, e["candidate"])
            with self.subTest(e["name"]):
                res = check_file(path, e["platform"] == "cuda", os.path.join(root, e["problem"], "problem.py"))
                if e["expect"] == "fail:static":
                    self.assertFalse(res.passed)
                else:
                    self.assertNotIn(os.path.basename(path), STATIC_NOW)
                    self.assertTrue(res.passed, f"{e['name']}: {res.reason}")

    def test_prompt_rules_are_the_exported_ban_list(self) -> None:
        # The prompts embed prompts/bans.json, the export of PROMPT_RULES.
        with open(os.path.join(REPO, "prompts", "bans.json"), encoding="utf-8") as f:
            committed = json.load(f)
        self.assertEqual(committed, banlist.export(),
                         "prompts/bans.json is stale: run python -m kagent_harness.banlist > ../prompts/bans.json in harness/")

    def test_every_ban_is_worded_for_the_model(self) -> None:
        # A name added to a ban table needs a rule the model reads.
        self.assertEqual(banlist.uncovered(), [])
        self.assertFalse(banlist.rule_covers("torch.set_", "torch.settings", False))
        self.assertTrue(banlist.rule_covers("torch.set_", "torch.set_grad_enabled", False))
        self.assertTrue(banlist.rule_covers("module:*", "socket", True))
        self.assertFalse(banlist.rule_covers("module:*", "math", True))

    def test_prompt_prose_agrees(self) -> None:
        # The first rule lists the allowed imports and the allow-listed
        # attributes of MODULE_ATTRIBUTES.
        go = "\n".join(w + " " + y for w, y, _p in banlist.PROMPT_RULES)
        m = re.search(r'standard modules: ([a-z_, ]+);', go)
        self.assertIsNotNone(m, "rules.go: the imports entry is missing")
        listed = {n.strip() for n in m.group(1).split(",")}  # type: ignore[union-attr]
        self.assertEqual(listed, set(banlist.ALLOWED_IMPORTS) - {"torch", "triton", "__future__"})
        for mod in ("os", "sys", "time", "warnings"):
            for attr in banlist.MODULE_ATTRIBUTES[mod]:
                if attr.startswith("_") or attr in ("sep", "linesep", "name", "getpid", "stdin", "version",
                                                    "float_info", "byteorder", "getrecursionlimit",
                                                    "perf_counter_ns", "time_ns", "monotonic_ns"):
                    continue  # not worth a kernel's attention
                with self.subTest(f"{mod}.{attr}"):
                    self.assertRegex(go, rf"\b{mod}\.([a-z_/]*/)?{attr}\b|/{attr}\b")
        for word in ("as a value", "getattr", "type()", "__dict__", "torch.nn layers"):
            self.assertIn(word, go)

    def test_reason_names_helper_path(self) -> None:
        src = textwrap.dedent(
            """
            import torch
            def _inner(a, b):
                return torch.mm(a, b)
            def _outer(a, b):
                return _inner(a, b)
            def kernel_function(a, b):
                return _outer(a, b)
            """
        )
        res = check_source(src, False)
        self.assertFalse(res.passed)
        self.assertIn("helper _inner()", res.reason)
        self.assertIn("line 4", res.reason)

    def test_detects_jit_call_form(self) -> None:
        src = textwrap.dedent(
            """
            import triton
            import triton.language as tl
            def _body(x_ptr):
                tl.store(x_ptr, tl.load(x_ptr).sum())
            _kernel = triton.jit(_body)
            def kernel_function(x):
                _kernel[(1,)](x)
                return x
            """
        )
        res = check_source(src, True)
        self.assertTrue(res.passed, res.reason)
        self.assertTrue(res.has_triton_jit)

    def test_entries_reported(self) -> None:
        res = check_source("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n", False)
        self.assertEqual(res.entries, ["ModelNew"])


if __name__ == "__main__":
    unittest.main()
