"""The precision check: TF32- or bf16-level arithmetic in an fp32 problem."""

from __future__ import annotations

import unittest
import unittest.mock

import torch

from kagent_harness.numerics import compare_outputs, tolerance_for
from kagent_harness.precision import _explained, assess, tf32, tf32_truncated
from tests.helpers import TempFilesCase

# A long reduction over all-positive inputs: TF32 rounding averages out, so a
# TF32 kernel passes the element tolerance (as KernelBench's matmul problems do).
MATMUL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.rand(k, n))

    def forward(self, x):
        return x @ self.w

M, K, N = 32, 2048, 48

def get_inputs():
    return [torch.rand(M, K)]

def get_init_inputs():
    return [K, N]
"""

# A reduction long enough that an fp32 kernel summing in order is off by a
# quarter of what TF32 operands cost, with a reference (a tree sum) accurate to
# 5e-8. The error's size alone cannot tell the two apart here.
MATVEC = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, x):
        return (a * x.t()).sum(dim=1, keepdim=True)

M, K = 256, 32768

def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]

def get_init_inputs():
    return []
"""


class PrecisionTest(TempFilesCase):
    def run_with(self, out_of, **options):
        p = self.problem(MATMUL, **options)
        draw = p.draws[0]
        return assess(p, draw.inputs, draw.ref, out_of(p, draw.inputs[0]))

    def test_fp32_kernel_passes(self) -> None:
        def blocked(p, x):  # another order of summation, in fp32
            w = p.model.w
            return sum(x[:, i:i + 256] @ w[i:i + 256] for i in range(0, x.shape[1], 256))

        applies, note, failure, *_ = self.run_with(blocked)
        self.assertTrue(applies, note)
        self.assertIsNone(failure, note)
        self.assertIn("operands rounded: TF32/fp16", note)

    def test_tf32_kernel_fails_although_within_tolerance(self) -> None:
        def tf32_dot(p, x):
            return tf32(x) @ tf32(p.model.w)

        p = self.problem(MATMUL)
        out = tf32_dot(p, p.draws[0].inputs[0])
        self.assertTrue(compare_outputs(out, p.draws[0].ref, lambda dt: tolerance_for(dt)).ok,
                        "the case should be one the element tolerance misses")
        applies, note, failure, *_ = self.run_with(tf32_dot)
        self.assertTrue(applies)
        self.assertIsNotNone(failure)
        self.assertIn('input_precision="ieee"', failure)

    def test_bf16_kernel_fails(self) -> None:
        def bf16_dot(p, x):
            return (x.bfloat16().float() @ p.model.w.bfloat16().float())

        _, _, failure, *_ = self.run_with(bf16_dot)
        self.assertIsNotNone(failure)

    def test_truncated_tf32_kernel_fails(self) -> None:
        def truncated_dot(p, x):
            return tf32_truncated(x) @ tf32_truncated(p.model.w)

        _, note, failure, *_ = self.run_with(truncated_dot)
        self.assertIsNotNone(failure, note)
        self.assertIn("truncated TF32", failure)

    def test_fp32_summed_in_order_passes(self) -> None:
        # As on the H200: examples/matvec with BLOCK_K=16 was off by 6e-7
        # against fp64 with TF32 operands at 1.8e-6.
        p = self.problem(MATVEC)
        draw = p.draws[0]
        a, x = draw.inputs
        acc = torch.zeros(a.shape[0], 1)
        for i in range(0, a.shape[1], 16):
            acc = acc + a[:, i:i + 16] @ x[i:i + 16]
        applies, note, failure, *_ = assess(p, draw.inputs, draw.ref, acc)
        self.assertTrue(applies, note)
        self.assertIsNone(failure, note)
        e_kernel = float(note.split("kernel ")[1].split(",")[0])
        e_tf32 = float(note.split("TF32/fp16 ")[1].split(" ")[0])
        self.assertGreater(e_kernel, 0.2 * e_tf32, "the case must be one a size-only rule gets wrong: " + note)
        # The same reduction on TF32 operands fails.
        cheat = (tf32(a) * tf32(x).t()).sum(dim=1, keepdim=True)
        _, note, failure, *_ = assess(p, draw.inputs, draw.ref, cheat)
        self.assertIsNotNone(failure, note)
        self.assertIn("TF32/fp16", failure)

    def test_few_output_elements_skipped(self) -> None:
        p = self.problem(MATMUL.replace("M, K, N = 32, 2048, 48", "M, K, N = 4, 2048, 8"))
        draw = p.draws[0]
        applies, note, failure, *_ = assess(p, draw.inputs, draw.ref, tf32(draw.inputs[0]) @ tf32(p.model.w))
        self.assertFalse(applies)
        self.assertIsNone(failure)
        self.assertIn("32 output elements are too few", note)

    def test_skipped_where_it_does_not_apply(self) -> None:
        def tf32_dot(p, x):
            return tf32(x) @ tf32(p.model.w)

        for options, why in (({"tf32": "allow"}, "TF32 is allowed"), ({"atol": 1e-3}, "its own tolerance"),
                             ({"dtype": "bf16"}, "not fp32")):
            with self.subTest(options=options):
                applies, note, failure, *_ = self.run_with(
                    tf32_dot if "dtype" not in options else (lambda p, x: x @ p.model.w), **options)
                self.assertFalse(applies)
                self.assertIsNone(failure)
                self.assertIn(why, note)

    def test_share_in_the_span(self) -> None:
        g = torch.Generator().manual_seed(3)
        n = 4096
        e1, e2, other = (torch.randn(n, generator=g, dtype=torch.float64) for _ in range(3))
        e2 = e2 * 1e4  # the roundings' errors differ in size by orders of magnitude

        def share(d, es):
            return _explained(float(d @ d), [float(d @ e) for e in es], [[float(a @ b) for b in es] for a in es])

        self.assertAlmostEqual(share(3e-6 * e1 + 2e-2 * e2 * 1e-4, [e1, e2]), 1.0, places=6)
        self.assertLess(share(other, [e1, e2]), 0.1)
        self.assertAlmostEqual(share(e1 + other, [e1, e2]), 2 ** -0.5, delta=0.03)
        # Two nearly parallel errors: their tiny difference is not a direction of its own.
        near = e1 + 1e-6 * other
        self.assertLess(share(other, [e1, near]), 0.1)
        self.assertEqual(share(other, []), 0.0)

    def test_tf32_rounding(self) -> None:
        x = torch.tensor([1.0, 1.0 + 2.0 ** -11, 1.0 + 2.0 ** -10, -3.0 - 2.0 ** -9])
        self.assertEqual(tf32(x).tolist(), [1.0, 1.0 + 2.0 ** -10, 1.0 + 2.0 ** -10, -3.0 - 2.0 ** -9])
        y = torch.tensor([1.0 + 2.0 ** -11, 1.0 + 2.0 ** -10 + 2.0 ** -11, -1.0 - 2.0 ** -11])
        self.assertEqual(tf32_truncated(y).tolist(), [1.0, 1.0 + 2.0 ** -10, -1.0])


if __name__ == "__main__":
    unittest.main()


class PrecisionOnEveryCallTest(TempFilesCase):
    """The check examines one draw chosen after all outputs are in; the other
    draws, and timing's unseen draws, are held to its error."""

    HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.rand(k, n))

    def forward(self, x):
        return sum(x[:, i:i + 256] @ self.w[i:i + 256] for i in range(0, x.shape[1], 256))
"""
    # fp32 on the first input it sees, TF32-rounded operands on every other.
    AFTER_FIRST = """
import torch
import torch.nn as nn

_first = []

def _tf32(t):
    bits = t.contiguous().clone().view(torch.int32)
    bits.add_(0x1000).bitwise_and_(~0x1FFF)
    return bits.view(torch.float32).view(t.shape)

class ModelNew(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.w = nn.Parameter(torch.rand(k, n))

    def forward(self, x):
        key = float(x[0, 0])
        if not _first:
            _first.append(key)
        if key == _first[0]:
            return x @ self.w
        return _tf32(x) @ _tf32(self.w.detach())
"""

    def verify(self, source: str):
        from kagent_harness.guard import Guard
        from kagent_harness.verify import VerifyOptions, verify

        from kagent_harness import verify as verify_module
        from kagent_harness.static_check import Result

        p = self.problem(MATMUL, seeds=[1, 2, 3])
        # The static check refuses torch's matmul; the layer under test is behind it.
        with unittest.mock.patch.object(verify_module, "check_source",
                                        lambda *a, **k: Result(True, [], True, ["ModelNew"])):
            result, cand = verify(p, self.write(source, "cand.py"),
                                  VerifyOptions(require_triton=False, check_launch=False), Guard())
        return p, result, cand

    def test_low_precision_after_the_first_call_fails_whichever_draw_is_examined(self) -> None:
        from kagent_harness import verify as verify_module

        for examined in range(3):
            with self.subTest(examined=examined), \
                    unittest.mock.patch.object(verify_module._rng, "randrange", lambda n, k=examined: k):
                _, result, _ = self.verify(self.AFTER_FIRST)
                self.assertFalse(result["passed"], result)
                self.assertEqual(result["failure"], "precision", result["reason"])

    def test_honest_kernel_passes_and_sets_the_bound_for_timing(self) -> None:
        from kagent_harness.timing import unseen_verdict
        from kagent_harness.verify import problem_tolerance

        p, result, cand = self.verify(self.HONEST)
        self.assertTrue(result["passed"], result.get("reason"))
        bound = cand.precision_bound
        self.assertIsNotNone(bound, "an fp32 matmul with K = 2048 sets a bound")
        x = torch.rand(32, 2048)
        w = p.model.w.detach()
        ref = p.model(x)
        tol = problem_tolerance(p)
        self.assertEqual(unseen_verdict(sum(x[:, i:i + 512] @ w[i:i + 512] for i in range(0, 2048, 512)), ref, tol,
                                        bound), "")
        low = tf32(x) @ tf32(w)
        self.assertTrue(compare_outputs(low, ref, tol).ok, "the case should be one the element tolerance misses")
        self.assertIn("precision", unseen_verdict(low, ref, tol, bound))
