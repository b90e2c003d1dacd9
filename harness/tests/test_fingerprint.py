"""Code fingerprints for finding duplicate candidates (fingerprint.py)."""

from __future__ import annotations

import unittest

from kagent_harness.fingerprint import fingerprint_source

BASE = '''"""Doubles x."""
import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """One block per program."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def kernel_function(x):
    y = torch.empty_like(x)
    n = x.numel()
    double_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, num_warps=4)
    return y
'''


def _hash(src: str) -> str:
    return fingerprint_source(src)["hash"]


class FingerprintTest(unittest.TestCase):
    def test_same_code(self) -> None:
        cases = {
            "comments and blank lines": BASE.replace("    mask = offs < n\n", "    # the tail\n\n    mask = offs < n  # guard\n"),
            "docstrings": BASE.replace('    """One block per program."""\n', "").replace('"""Doubles x."""\n', ""),
            "formatting": BASE.replace("tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)",
                                       "tl.store(\n        y_ptr + offs,\n        tl.load(x_ptr + offs, mask=mask) * 2,\n        mask=mask,\n    )"),
            "local names": BASE.replace("pid", "program").replace("offs", "offsets").replace("mask = ", "in_bounds = ")
                               .replace("mask=mask", "mask=in_bounds").replace("y = ", "out = ").replace("return y", "return out")
                               .replace("(x, y, n", "(x, out, n"),
            "parameter names inside": BASE.replace("x_ptr", "src").replace("y_ptr", "dst"),
        }
        for name, src in cases.items():
            with self.subTest(name):
                self.assertNotEqual(src, BASE)
                self.assertEqual(_hash(src), _hash(BASE))

    def test_different_code(self) -> None:
        cases = {
            "a constexpr passed at launch": BASE.replace("BLOCK=256", "BLOCK=512"),
            "num_warps": BASE.replace("num_warps=4", "num_warps=8"),
            "the grid": BASE.replace("triton.cdiv(n, 256)", "triton.cdiv(n, 128)"),
            "an operation": BASE.replace("* 2", "+ 2"),
            "a global name": BASE.replace("tl.arange", "tl.zeros"),
            "the kernel's name": BASE.replace("double_kernel", "twice_kernel"),
        }
        for name, src in cases.items():
            with self.subTest(name):
                self.assertNotEqual(_hash(src), _hash(BASE))

    def test_record(self) -> None:
        f = fingerprint_source(BASE)
        self.assertEqual(f["method"], "ast")
        self.assertEqual(f["kernels"], ["double_kernel"])
        bad = fingerprint_source("def f(:\n")
        self.assertIsNone(bad["hash"])
        self.assertIn("does not parse", bad["reason"])


if __name__ == "__main__":
    unittest.main()


def _triton() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


@unittest.skipUnless(_triton(), "needs triton (TRITON_INTERPRET=1 on CPU)")
class TTIRFingerprintTest(unittest.TestCase):
    """The ttir fingerprint of one call, its launches recorded and compiled
    for GPUTarget("cuda", 90, 32) without a GPU (ttir.py)."""

    def setUp(self) -> None:
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="fingerprint-")
        self.n = 0

    def tearDown(self) -> None:
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)

    def _fp(self, src: str) -> dict:
        import importlib.util
        import os

        import torch

        from kagent_harness.ttir import fingerprint_call

        self.n += 1
        path = os.path.join(self.dir, f"cand{self.n}.py")
        with open(path, "w") as f:
            f.write(src)
        spec = importlib.util.spec_from_file_location(f"fp_cand{self.n}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        x = torch.randn(1000)
        return fingerprint_call(mod, src, lambda: mod.kernel_function(x))

    def test_same_and_different(self) -> None:
        base = self._fp(BASE)
        self.assertEqual(base["method"], "ttir", base)
        self.assertEqual(base["kernels"], ["double_kernel"])
        self.assertEqual(base["launches"], 1)
        same = {
            "local names": BASE.replace("pid", "program").replace("offs", "offsets"),
            # The syntax trees differ; the compiled code does not.
            "a temporary": BASE.replace("    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)",
                                        "    dst = y_ptr + offs\n    tl.store(dst, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)"),
        }
        for name, src in same.items():
            with self.subTest(name):
                got = self._fp(src)
                self.assertEqual(got["method"], "ttir", got)
                self.assertEqual(got["hash"], base["hash"])
        self.assertNotEqual(fingerprint_source(same["a temporary"])["hash"], fingerprint_source(BASE)["hash"])
        different = {
            "a constexpr passed at launch": BASE.replace("BLOCK=256", "BLOCK=512"),
            "num_warps": BASE.replace("num_warps=4", "num_warps=8"),
            "the grid": BASE.replace("triton.cdiv(n, 256)", "triton.cdiv(n, 128)"),
            "an operation": BASE.replace("* 2", "+ 2"),
            "the host code": BASE.replace("    return y", "    return y.clone()"),
        }
        for name, src in different.items():
            with self.subTest(name):
                self.assertNotEqual(self._fp(src)["hash"], base["hash"])

    def test_no_launch_falls_back_to_the_source(self) -> None:
        got = self._fp("import torch\n\ndef kernel_function(x):\n    return x * 2\n")
        self.assertEqual(got["method"], "ast")
        self.assertIn("no Triton launch seen", got["reason"])
