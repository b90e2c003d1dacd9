"""The precision check: TF32- or bf16-level arithmetic in an fp32 problem."""

from __future__ import annotations

import unittest

import torch

from kagent_harness.numerics import compare_outputs, tolerance_for
from kagent_harness.precision import assess, tf32
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


class PrecisionTest(TempFilesCase):
    def run_with(self, out_of, **options):
        p = self.problem(MATMUL, **options)
        draw = p.draws[0]
        return assess(p, draw.inputs, draw.ref, out_of(p, draw.inputs[0]))

    def test_fp32_kernel_passes(self) -> None:
        def blocked(p, x):  # another order of summation, in fp32
            w = p.model.w
            return sum(x[:, i:i + 256] @ w[i:i + 256] for i in range(0, x.shape[1], 256))

        applies, note, failure = self.run_with(blocked)
        self.assertTrue(applies, note)
        self.assertIsNone(failure, note)
        self.assertIn("operands rounded to TF32", note)

    def test_tf32_kernel_fails_although_within_tolerance(self) -> None:
        def tf32_dot(p, x):
            return tf32(x) @ tf32(p.model.w)

        p = self.problem(MATMUL)
        out = tf32_dot(p, p.draws[0].inputs[0])
        self.assertTrue(compare_outputs(out, p.draws[0].ref, lambda dt: tolerance_for(dt)).ok,
                        "the case should be one the element tolerance misses")
        applies, note, failure = self.run_with(tf32_dot)
        self.assertTrue(applies)
        self.assertIsNotNone(failure)
        self.assertIn('input_precision="ieee"', failure)

    def test_bf16_kernel_fails(self) -> None:
        def bf16_dot(p, x):
            return (x.bfloat16().float() @ p.model.w.bfloat16().float())

        _, _, failure = self.run_with(bf16_dot)
        self.assertIsNotNone(failure)

    def test_skipped_where_it_does_not_apply(self) -> None:
        def tf32_dot(p, x):
            return tf32(x) @ tf32(p.model.w)

        for options, why in (({"tf32": "allow"}, "TF32 is allowed"), ({"atol": 1e-3}, "its own tolerance"),
                             ({"dtype": "bf16"}, "not fp32")):
            with self.subTest(options=options):
                applies, note, failure = self.run_with(
                    tf32_dot if "dtype" not in options else (lambda p, x: x @ p.model.w), **options)
                self.assertFalse(applies)
                self.assertIsNone(failure)
                self.assertIn(why, note)

    def test_tf32_rounding(self) -> None:
        x = torch.tensor([1.0, 1.0 + 2.0 ** -11, 1.0 + 2.0 ** -10, -3.0 - 2.0 ** -9])
        self.assertEqual(tf32(x).tolist(), [1.0, 1.0 + 2.0 ** -10, 1.0 + 2.0 ** -10, -3.0 - 2.0 ** -9])


if __name__ == "__main__":
    unittest.main()
