"""The fused reductions (fused.py) against the torch code they stand in for.

The kernels run here through Triton's interpreter on CPU tensors
(TRITON_INTERPRET=1), with the device gate opened for the CPU, a small step
and few programs, so that spans of several steps, partial last steps and
many checksum blocks are all exercised. Every result is compared with the
torch path's on the same tensors: counts, the largest difference, where it
is and the largest reference value exactly, the squared norms to rounding.
"""

from __future__ import annotations

import contextlib
import os
import unittest
from typing import Iterator
from unittest import mock

import torch

from kagent_harness import checksum, fused, numerics
from kagent_harness.numerics import compare_tensor, device_violations, tensor_bits_equal, tolerance_for


def _triton() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return os.environ.get("TRITON_INTERPRET") == "1"


@contextlib.contextmanager
def fused_on_cpu(block: int = 32, programs: int = 3, split: int = 4) -> Iterator[None]:
    with mock.patch.object(fused, "_device_ok", lambda t: True), mock.patch.object(fused, "MIN_ELEMENTS", 0), \
            mock.patch.object(fused, "CHECKSUM_MIN_ELEMENTS", 0), mock.patch.object(fused, "BLOCK", block), mock.patch.object(fused, "MAX_PROGRAMS", programs), \
            mock.patch.object(fused, "CHECKSUM_SPLIT", split):
        yield
    if fused.failure():
        raise AssertionError(f"the fused path failed: {fused.failure()}")


@contextlib.contextmanager
def fused_off() -> Iterator[None]:
    with mock.patch.dict(os.environ, {"KAGENT_FUSED": "0"}):
        yield


def _cases() -> Iterator[tuple]:
    """(name, out, ref) pairs of one dtype each, covering every branch."""
    torch.manual_seed(7)
    ref = torch.randn(1000)
    yield "equal", ref.clone(), ref
    near = ref + 1e-6 * torch.randn(1000)
    yield "within tolerance", near, ref
    far = ref.clone()
    far[[5, 700]] += 0.5
    far[333] -= 0.5  # not the first of the largest
    yield "beyond tolerance, ties", far, ref
    nan_out = ref.clone()
    nan_out[[3, 999]] = float("nan")
    yield "new NaN", nan_out, ref
    nan_ref = ref.clone()
    nan_ref[10] = float("nan")
    both_nan = nan_ref.clone()
    yield "NaN where the reference is NaN", both_nan, nan_ref
    yield "number where the reference is NaN", ref.clone(), nan_ref
    inf_out = ref.clone()
    inf_out[17] = float("inf")
    inf_out[18] = float("-inf")
    yield "Inf where the reference is finite", inf_out, ref
    inf_ref = ref.clone()
    inf_ref[40] = float("inf")
    yield "Inf matched", inf_ref.clone(), inf_ref
    flipped = inf_ref.clone()
    flipped[40] = float("-inf")
    yield "Inf of the other sign", flipped, inf_ref
    huge_ref = torch.full((300,), -3e38)
    yield "difference overflows", torch.full((300,), 3e38), huge_ref
    zeros = torch.zeros(257)
    neg = zeros.clone()
    neg[100] = -0.0
    yield "signed zero", neg, zeros
    yield "all zero output", torch.zeros(1000), ref
    small_ref = 1e-6 * torch.randn(513)
    yield "small reference, zero output", torch.zeros(513), small_ref
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        r = torch.randn(777).to(dtype)
        o = (r.double() * (1 + 3e-3 * torch.randn(777).double())).to(dtype)
        o[50] = float("nan")
        yield f"{dtype}", o, r


@unittest.skipUnless(_triton(), "needs triton and TRITON_INTERPRET=1")
class FusedStatisticsTest(unittest.TestCase):
    def test_statistics_match_torch(self) -> None:
        for name, out, ref in _cases():
            tol = tolerance_for(ref.dtype)
            for atol, rtol in ((tol.atol, tol.rtol), (0.0, 0.0)):
                t = numerics.Tolerance(atol, rtol, tol.rel_l2)
                with fused_off():
                    want = numerics._statistics(out, ref, t)
                with fused_on_cpu():
                    self.assertIsNotNone(fused.compare_stats(out, ref, atol, rtol), name)
                    got = numerics._statistics(out, ref, t)
                with self.subTest(case=name, atol=atol):
                    self.assertEqual(got[:3], want[:3], "counts: new NaN, bad Inf, beyond tolerance")
                    self.assertEqual(got[5:], want[5:], "largest difference, its index, largest reference")
                    for g, w in zip(got[3:5], want[3:5]):
                        if w in (0.0, float("inf")):
                            self.assertEqual(g, w)
                        else:
                            self.assertAlmostEqual(g / w, 1.0, places=10)

    def test_comparisons_and_rechecks_agree(self) -> None:
        for name, out, ref in _cases():
            tol_fn = lambda dtype: tolerance_for(dtype)  # noqa: E731
            with fused_off():
                want = compare_tensor(out, ref, tol_fn(ref.dtype), "output")
                want_v = int(device_violations(out, ref, tol_fn))
            with fused_on_cpu():
                got = compare_tensor(out, ref, tol_fn(ref.dtype), "output")
                got_v = int(device_violations(out, ref, tol_fn))
            with self.subTest(case=name):
                self.assertEqual((got.ok, got.check, got.reason), (want.ok, want.check, want.reason))
                self.assertEqual(got_v, want_v)
                self.assertEqual(got_v == 0, want.ok or name == "equal", "a recheck fails exactly what verification fails")

    def test_integer_outputs(self) -> None:
        a = torch.randint(-5, 5, (999,), dtype=torch.int64)
        b = a.clone()
        b[[0, 400, 998]] += 1
        tol = tolerance_for(torch.float32)
        with fused_off():
            want = compare_tensor(b, a, tol, "output").reason
        with fused_on_cpu():
            self.assertTrue(compare_tensor(a.clone(), a, tol, "output").ok)
            self.assertEqual(compare_tensor(b, a, tol, "output").reason, want)
            self.assertEqual(int(device_violations(b, a, lambda d: tol)), 3)


@unittest.skipUnless(_triton(), "needs triton and TRITON_INTERPRET=1")
class FusedBitsTest(unittest.TestCase):
    def test_bit_equality(self) -> None:
        x = torch.randn(1001)
        with fused_on_cpu():
            self.assertTrue(tensor_bits_equal(x, x.clone()))
            y = x.clone()
            y[1000] = torch.nextafter(y[1000], torch.tensor(10.0))
            self.assertFalse(tensor_bits_equal(x, y), "one ulp in the last element")
            z = torch.zeros(300)
            nz = z.clone()
            nz[7] = -0.0
            self.assertFalse(tensor_bits_equal(z, nz), "signed zero")
            nan = torch.full((300,), float("nan"))
            other = nan.clone().view(torch.int32)
            other[299] |= 1
            self.assertFalse(tensor_bits_equal(nan, other.view(torch.float32)), "NaN payload")
            self.assertTrue(tensor_bits_equal(nan, nan.clone()))
            flags = torch.rand(500) > 0.5
            self.assertTrue(tensor_bits_equal(flags, flags.clone()))
            self.assertFalse(tensor_bits_equal(flags, ~flags))
            d = torch.randn(333, dtype=torch.float64)
            e = d.clone()
            e[0] = -e[0]
            self.assertFalse(tensor_bits_equal(d, e))

    def test_checksums_match_torch(self) -> None:
        torch.manual_seed(3)
        tensors = [torch.randn(1000), torch.randn(7, 131).to(torch.bfloat16), torch.randn(555, dtype=torch.float64),
                   torch.randint(-(1 << 40), 1 << 40, (300,), dtype=torch.int64), torch.rand(999) > 0.5,
                   torch.randint(-100, 100, (1234,), dtype=torch.int8), torch.randn(200, dtype=torch.complex64),
                   torch.full((100,), float("nan"))]
        # Small blocks: many blocks, a partial last one, a tensor's words
        # crossing block boundaries (two words per element for 8-byte types).
        for chunk in (checksum.CHUNK, 64, 100):
            with mock.patch.object(checksum, "CHUNK", chunk), mock.patch.dict(checksum._weights, clear=True):
                for t in tensors:
                    with fused_off():
                        want = checksum.tensor_checksum(t)
                    with fused_on_cpu(block=16, split=3):
                        got = checksum.tensor_checksum(t)
                    self.assertEqual(got, want, (chunk, t.dtype))
        with fused_on_cpu():
            a = torch.randn(4096)
            b = a.clone()
            b[4095] = torch.nextafter(b[4095], torch.tensor(10.0))
            self.assertNotEqual(checksum.tensor_checksum(a), checksum.tensor_checksum(b))


class FusedGateTest(unittest.TestCase):
    def test_checksum_threshold(self) -> None:
        # The checksum takes the fused path from CHECKSUM_MIN_ELEMENTS up,
        # the comparisons from MIN_ELEMENTS.
        calls = []

        def blocks(d, word, weights):
            calls.append(d.numel())
            return None  # the caller then takes the torch path

        with mock.patch.object(fused, "_device_ok", lambda t: True), mock.patch.object(fused, "MIN_ELEMENTS", 10), \
                mock.patch.object(fused, "CHECKSUM_MIN_ELEMENTS", 1000), mock.patch.object(fused, "checksum_blocks", blocks):
            with fused_off():
                want = checksum.tensor_checksum(torch.ones(999))
            self.assertEqual(checksum.tensor_checksum(torch.ones(999)), want)
            checksum.tensor_checksum(torch.ones(1000))
        self.assertEqual(calls, [1000])

    def test_gate(self) -> None:
        cpu = torch.zeros(fused.MIN_ELEMENTS)
        self.assertFalse(fused.usable(cpu), "CPU tensors take the torch path")
        with mock.patch.object(fused, "_device_ok", lambda t: True):
            self.assertTrue(fused.usable(cpu))
            self.assertFalse(fused.usable(torch.zeros(fused.MIN_ELEMENTS - 1)), "small tensors")
            self.assertFalse(fused.usable(torch.zeros(2, fused.MIN_ELEMENTS).t()), "not contiguous")
            self.assertFalse(fused.usable(torch.zeros(fused.MIN_ELEMENTS, dtype=torch.complex64)), "complex")
            with mock.patch.dict(os.environ, {"KAGENT_FUSED": "0"}):
                self.assertFalse(fused.usable(cpu), "KAGENT_FUSED=0")

    def test_a_failing_kernel_turns_the_path_off(self) -> None:
        def broken() -> None:
            raise RuntimeError("no compiler")

        ref = torch.randn(100)
        out = ref.clone()
        out[9] += 1
        tol = tolerance_for(torch.float32)
        with fused_off():
            want = compare_tensor(out, ref, tol, "output")
        with mock.patch.object(fused, "_device_ok", lambda t: True), mock.patch.object(fused, "MIN_ELEMENTS", 0), \
                mock.patch.object(fused, "_compile", broken), mock.patch.object(fused, "_failed", []):
            got = compare_tensor(out, ref, tol, "output")
            self.assertIn("no compiler", fused.failure())
            self.assertFalse(fused.usable(ref), "off for the rest of the process")
            self.assertEqual(checksum.tensor_checksum(ref), checksum.tensor_checksum(ref.clone()))
            self.assertTrue(tensor_bits_equal(ref, ref.clone()))
        self.assertEqual((got.ok, got.reason), (want.ok, want.reason))


if __name__ == "__main__":
    unittest.main()
