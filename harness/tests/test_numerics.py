"""Output comparison: tolerances, relative L2, NaN/Inf, structure, bits."""

from __future__ import annotations

import unittest

import torch

from kagent_harness import numerics
from kagent_harness.numerics import bits_equal, compare_outputs, device_violations, first_changed_input, tolerance_for


def tol(dtype: torch.dtype) -> numerics.Tolerance:
    return tolerance_for(dtype)


class ToleranceTest(unittest.TestCase):
    def test_defaults(self) -> None:
        self.assertEqual(tolerance_for(torch.float32).atol, 1e-4)
        self.assertEqual(tolerance_for(torch.float16).rtol, 1e-2)
        self.assertEqual(tolerance_for(torch.bfloat16).atol, 1e-2)
        self.assertAlmostEqual(tolerance_for(torch.float32).rel_l2, 1e-3)
        self.assertAlmostEqual(tolerance_for(torch.bfloat16).rel_l2, 1e-1)

    def test_override(self) -> None:
        t = tolerance_for(torch.float32, atol=1e-3, rtol=0.0)
        self.assertEqual((t.atol, t.rtol), (1e-3, 0.0))
        self.assertAlmostEqual(t.rel_l2, 1e-2)
        self.assertEqual(tolerance_for(torch.float32, atol=1.0).rel_l2, numerics.REL_L2_CAP)


class CompareTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(0)
        self.ref = torch.randn(32, 16)

    def test_exact_and_close(self) -> None:
        self.assertTrue(compare_outputs(self.ref.clone(), self.ref, tol).ok)
        c = compare_outputs(self.ref * (1 + 1e-6), self.ref, tol)
        self.assertTrue(c.ok)
        self.assertGreater(c.max_abs_err, 0)

    def test_mismatch_reports_index_and_values(self) -> None:
        out = self.ref.clone()
        out[3, 5] += 1.0
        c = compare_outputs(out, self.ref, tol)
        self.assertFalse(c.ok)
        self.assertEqual(c.check, "correctness")
        self.assertIn("1 of 512", c.reason)
        self.assertIn("[3, 5]", c.reason)

    def test_zeros_fail_on_tiny_reference(self) -> None:
        ref = self.ref * 1e-7
        c = compare_outputs(torch.zeros_like(ref), ref, tol)
        self.assertFalse(c.ok)
        self.assertIn("relative L2", c.reason)
        self.assertAlmostEqual(c.rel_l2, 1.0)

    def test_nan_where_reference_finite_is_unwritten(self) -> None:
        out = self.ref.clone()
        out[7, 0] = float("nan")
        c = compare_outputs(out, self.ref, tol)
        self.assertFalse(c.ok)
        self.assertEqual(c.check, "unwritten_output")
        self.assertIn("[7, 0]", c.reason)

    def test_nan_matching_reference_nan_is_fine(self) -> None:
        ref = self.ref.clone()
        ref[0, 0] = float("nan")
        self.assertTrue(compare_outputs(ref.clone(), ref, tol).ok)

    def test_lost_nan_is_named(self) -> None:
        ref = self.ref.clone()
        ref[2, 3] = float("nan")
        out = ref.clone()
        out[2, 3] = 0.0
        c = compare_outputs(out, ref, tol)
        self.assertFalse(c.ok)
        self.assertIn("where the reference is NaN or Inf", c.reason)
        self.assertIn("[2, 3]", c.reason)
        self.assertIn("expected nan", c.reason)

    def test_values_shown_with_enough_digits(self) -> None:
        ref = torch.full((4,), 1020.0)
        out = ref.clone()
        out[1] = 1020.25
        c = compare_outputs(out, ref, tol)
        self.assertFalse(c.ok)
        self.assertIn("got 1020.25, expected 1020", c.reason)

    def test_inf_never_passes(self) -> None:
        out = self.ref.clone()
        out[1, 1] = float("inf")
        c = compare_outputs(out, self.ref, tol)
        self.assertFalse(c.ok)
        self.assertIn("Inf", c.reason)

    def test_shape_dtype_type(self) -> None:
        self.assertIn("shape", compare_outputs(self.ref[:, :8], self.ref, tol).reason)
        self.assertIn("dtype", compare_outputs(self.ref.double(), self.ref, tol).reason)
        self.assertIn("expected a Tensor", compare_outputs([self.ref], self.ref, tol).reason)

        class Sub(torch.Tensor):
            pass

        self.assertIn("plain torch.Tensor", compare_outputs(self.ref.clone().as_subclass(Sub), self.ref, tol).reason)

    def test_tuples_numbers_none(self) -> None:
        ref = (self.ref, 3, 2.5, None)
        self.assertTrue(compare_outputs([self.ref.clone(), 3, 2.5000001, None], ref, tol).ok)
        self.assertIn("has 2 elements", compare_outputs((self.ref, 3), ref, tol).reason)
        self.assertIn("output[1]", compare_outputs((self.ref, 4, 2.5, None), ref, tol).reason)
        self.assertIn("output[3]", compare_outputs((self.ref, 3, 2.5, 0), ref, tol).reason)

    def test_integer_outputs_exact(self) -> None:
        ref = torch.arange(10)
        out = ref.clone()
        out[4] += 1
        c = compare_outputs(out, ref, tol)
        self.assertFalse(c.ok)
        self.assertIn("exact match", c.reason)

    def test_chunked_comparison(self) -> None:
        old = numerics.CHUNK
        numerics.CHUNK = 100
        try:
            ref = torch.randn(1000)
            out = ref.clone()
            out[777] = float("nan")
            c = compare_outputs(out, ref, tol)
            self.assertEqual(c.check, "unwritten_output")
            self.assertIn("[777]", c.reason)
        finally:
            numerics.CHUNK = old

    def test_bf16(self) -> None:
        ref = self.ref.to(torch.bfloat16)
        out = (self.ref * 1.001).to(torch.bfloat16)
        self.assertTrue(compare_outputs(out, ref, tol).ok)


class BitsTest(unittest.TestCase):
    def test_bits(self) -> None:
        a = torch.tensor([1.0, float("nan"), -0.0])
        self.assertTrue(bits_equal(a, a.clone()))
        self.assertFalse(bits_equal(a, torch.tensor([1.0, float("nan"), 0.0])))
        self.assertFalse(bits_equal(a, a.double()))
        self.assertTrue(bits_equal((a, 1), [a.clone(), 1]))

    def test_first_changed_input(self) -> None:
        x = torch.ones(3)
        self.assertIsNone(first_changed_input([x.clone(), 2], [x, 2]))
        y = x.clone()
        y[1] = 5
        self.assertIn("input 0", first_changed_input([y, 2], [x, 2]) or "")


class PiecesTest(unittest.TestCase):
    """Comparisons in pieces of numerics.CHUNK elements give the answers of a
    whole-tensor comparison, for contiguous and non-contiguous tensors."""

    def setUp(self) -> None:
        self.saved = numerics.CHUNK
        numerics.CHUNK = 7
        torch.manual_seed(1)

    def tearDown(self) -> None:
        numerics.CHUNK = self.saved

    def test_max_error_location_and_stats(self) -> None:
        ref = torch.randn(9, 13)
        out = ref.clone()
        out[3, 5] += 0.5
        out[8, 12] += 0.25
        c = compare_outputs(out, ref, tol)
        self.assertFalse(c.ok)
        self.assertIn("2 of 117 elements differ", c.reason)
        self.assertIn("at index [3, 5]", c.reason)
        self.assertAlmostEqual(c.max_abs_err, 0.5, places=5)
        whole = (out - ref).norm().item() / ref.norm().item()
        self.assertAlmostEqual(c.rel_l2, whole, places=6)

    def test_non_contiguous(self) -> None:
        base = torch.randn(13, 9)
        ref = base.t()  # [9, 13], not contiguous
        out = ref.contiguous().clone()
        self.assertTrue(compare_outputs(out, ref, tol).ok)
        self.assertTrue(bits_equal(out, ref))
        out[4, 11] = float("nan")
        c = compare_outputs(out, ref, tol)
        self.assertEqual(c.check, "unwritten_output")
        self.assertIn("[4, 11]", c.reason)
        self.assertFalse(bits_equal(out, ref))
        self.assertIn("1 of 117 elements differ", numerics.difference_summary(out, ref.contiguous()))

    def test_integers_and_bits(self) -> None:
        ref = torch.arange(50).reshape(5, 10)
        out = ref.clone()
        out[4, 9] = -1
        c = compare_outputs(out, ref, tol)
        self.assertIn("1 of 50 elements differ", c.reason)
        self.assertIn("[4, 9]", c.reason)
        self.assertFalse(bits_equal(out, ref))
        self.assertEqual(int(device_violations(out, ref, tol)), 1)
        a = torch.zeros(40)
        b = a.clone()
        b[39] = -0.0
        self.assertFalse(bits_equal(a, b))  # the sign bit counts
        self.assertTrue(compare_outputs(b, a, tol).ok)

    def test_difference_summary(self) -> None:
        a = torch.randn(30)
        b = a.clone()
        self.assertEqual(numerics.difference_summary(a, b), "")
        b[2] += 1.0
        b[29] = float("nan")
        self.assertEqual(numerics.difference_summary(a, b), "2 of 30 elements differ (max diff inf)")
        nan = torch.full((20,), float("nan"))
        self.assertEqual(numerics.difference_summary(nan, nan.clone()), "")

    def test_complex(self) -> None:
        ref = torch.randn(11, dtype=torch.complex64)
        out = ref.clone()
        self.assertTrue(compare_outputs(out, ref, tol).ok)
        out[6] = out[6] + 1j
        c = compare_outputs(out, ref, tol)
        self.assertFalse(c.ok)
        self.assertIn("[6]", c.reason)


class DeviceViolationsTest(unittest.TestCase):
    def test_counts(self) -> None:
        ref = torch.randn(100)
        self.assertEqual(int(device_violations(ref.clone(), ref, tol)), 0)
        bad = ref.clone()
        bad[:3] = 100.0
        self.assertGreaterEqual(int(device_violations(bad, ref, tol)), 3)
        tiny = ref * 1e-7
        self.assertGreaterEqual(int(device_violations(torch.zeros_like(tiny), tiny, tol)), 1)
        self.assertEqual(int(device_violations((ref,), (ref,), tol)), 0)
        self.assertEqual(int(device_violations(ref[:5], ref, tol)), 1)


if __name__ == "__main__":
    unittest.main()
