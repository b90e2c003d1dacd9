"""The reference's FLOP count in load_problem: null with a reason on torch
without FlopCounterMode (Debian's 1.13), and the plumbing through an injected
counter module that counts matrix products like FlopCounterMode does."""

from __future__ import annotations

import types
import unittest
from typing import Any, Dict, Optional

import torch

from kagent_harness import flops
from tests.helpers import ADD_RELU, TORCH2, TempFilesCase

MATMUL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)

M = 12
K = 5
N = 7

def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]

def get_init_inputs():
    return []
"""

LINEAR_WITH_STATE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 3)
        self.register_buffer("calls", torch.zeros(()))
    def forward(self, x):
        self.calls += 1
        return self.lin(x)

def get_inputs():
    return [torch.rand(4, 6)]

def get_init_inputs():
    return []
"""


def fake_counter_module(fail: Optional[BaseException] = None) -> types.ModuleType:
    """A stand-in for torch.utils.flop_counter: FlopCounterMode(display=False)
    counts 2*M*N*K per matrix product, through a TorchFunctionMode."""
    from torch.overrides import TorchFunctionMode

    products = {torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.nn.functional.linear}

    class FlopCounterMode(TorchFunctionMode):
        instances = []

        def __init__(self, display: bool = True) -> None:
            super().__init__()
            self.display = display
            self.total = 0
            FlopCounterMode.instances.append(self)

        def __torch_function__(self, func: Any, types_: Any, args: Any = (), kwargs: Optional[Dict[str, Any]] = None) -> Any:
            kwargs = kwargs or {}
            if fail is not None:
                raise fail
            if func in products:
                a, b = args[0], args[1]
                if func is torch.nn.functional.linear:
                    m, k, n = a.shape[-2], a.shape[-1], b.shape[0]
                else:
                    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
                self.total += 2 * m * n * k
            return func(*args, **kwargs)

        def get_total_flops(self) -> int:
            return self.total

    mod = types.ModuleType("fake_flop_counter")
    mod.FlopCounterMode = FlopCounterMode  # type: ignore[attr-defined]
    return mod


class FlopsTest(TempFilesCase):
    def test_real_counter_or_reason(self) -> None:
        s = self.problem(MATMUL).summary()
        self.assertIn("flops", s)
        if flops.counter_module() is None:  # torch < 2.1 (Debian's 1.13)
            self.assertFalse(TORCH2 and torch.__version__ >= "2.1", f"torch {torch.__version__} has FlopCounterMode")
            self.assertIsNone(s["flops"])
            self.assertIn("not counted", s["flops_note"])
            self.assertIn("torch >= 2.1", s["flops_note"])
            self.assertIn(torch.__version__, s["flops_note"])
        else:
            self.assertEqual(s["flops"], 2 * 12 * 7 * 5)

    def test_injected_counter_counts_one_forward(self) -> None:
        fake = fake_counter_module()
        p = self.problem(MATMUL, flop_counter=fake)
        s = p.summary()
        self.assertEqual(s["flops"], 2 * 12 * 7 * 5)
        self.assertIn("FlopCounterMode", s["flops_note"])
        self.assertIn("reference dtype float32", s["flops_note"])
        self.assertNotIn("TF32", s["flops_note"])
        # One counter, built with display=False, for one forward on the main shape.
        self.assertEqual(len(fake.FlopCounterMode.instances), 1)
        self.assertFalse(fake.FlopCounterMode.instances[0].display)

    def test_main_shape_only_and_dtype_policy(self) -> None:
        p = self.problem(MATMUL, flop_counter=fake_counter_module(), shapes=[{"M": 100}], dtype="bf16",
                         tf32="allow")
        s = p.summary()
        self.assertEqual(s["flops"], 2 * 12 * 7 * 5)  # not the {M: 100} shape set
        self.assertIn("reference dtype bf16", s["flops_note"])
        self.assertIn("TF32 allowed", s["flops_note"])

    def test_elementwise_counts_zero(self) -> None:
        s = self.problem(ADD_RELU, flop_counter=fake_counter_module()).summary()
        self.assertEqual(s["flops"], 0)

    def test_counter_failure_is_null_with_reason(self) -> None:
        s = self.problem(MATMUL, flop_counter=fake_counter_module(RuntimeError("unsupported op")),
                         tf32="allow").summary()
        self.assertIsNone(s["flops"])
        self.assertIn("FlopCounterMode raised RuntimeError: unsupported op", s["flops_note"])
        self.assertIn("TF32 allowed", s["flops_note"])

    def test_model_state_restored_and_stored_inputs_used(self) -> None:
        p = self.problem(LINEAR_WITH_STATE, flop_counter=fake_counter_module())
        self.assertEqual(p.summary()["flops"], 2 * 4 * 3 * 6)
        # Three reference draws ran; the counting forward left no trace in the buffers.
        self.assertEqual(float(p.model.calls), 3.0)
        self.assertFalse(p.main.ref_mutates_inputs)

    def test_in_place_reference_is_counted_on_a_copy(self) -> None:
        from kagent_harness.loading import references_intact

        src = MATMUL.replace("return torch.matmul(a, b)", "a.mul_(2)\n        return torch.matmul(a, b)")
        p = self.problem(src, flop_counter=fake_counter_module())
        self.assertTrue(p.main.ref_mutates_inputs)
        self.assertIsNone(references_intact(p))
        self.assertEqual(p.summary()["flops"], 2 * 12 * 7 * 5)


if __name__ == "__main__":
    unittest.main()
