"""Keyed bit-exact checksums of the stored draws (checksum.py)."""

from __future__ import annotations

import unittest
from unittest import mock

import torch

from kagent_harness import checksum
from kagent_harness.checksum import tensor_checksum


class ChecksumTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(2)

    def test_equal_contents_equal_checksums(self) -> None:
        for t in (torch.randn(5, 7), torch.arange(12, dtype=torch.int64), torch.randn(9).to(torch.bfloat16),
                  torch.rand(6) > 0.5, torch.randn(4, dtype=torch.complex64), torch.randn(3, dtype=torch.float64),
                  torch.zeros(0), torch.tensor(3.5)):
            self.assertEqual(tensor_checksum(t), tensor_checksum(t.clone()), t.dtype)

    def test_every_bit_counts(self) -> None:
        a = torch.randn(64)
        words = a.clone().view(torch.int32)
        for pos, bit in ((0, 0), (17, 31), (63, 22)):
            b = words.clone()
            b[pos] ^= 1 << bit if bit < 31 else -(1 << 31)
            self.assertNotEqual(tensor_checksum(a), tensor_checksum(b.view(torch.float32)), (pos, bit))
        z = torch.zeros(8)
        nz = z.clone()
        nz[3] = -0.0
        self.assertNotEqual(tensor_checksum(z), tensor_checksum(nz))
        nan = torch.full((4,), float("nan"))
        other = nan.clone().view(torch.int32)
        other[1] |= 1  # another NaN payload
        self.assertNotEqual(tensor_checksum(nan), tensor_checksum(other.view(torch.float32)))

    def test_order_shape_and_dtype_count(self) -> None:
        a = torch.arange(10, dtype=torch.float32)
        self.assertNotEqual(tensor_checksum(a), tensor_checksum(a.flip(0)))
        self.assertNotEqual(tensor_checksum(a), tensor_checksum(a.reshape(2, 5)))
        self.assertNotEqual(tensor_checksum(a.view(torch.int32)), tensor_checksum(a))

    def test_pieces_and_non_contiguous(self) -> None:
        with mock.patch.object(checksum, "CHUNK", 8), mock.patch.dict(checksum._weights, clear=True):
            a = torch.randn(9, 13)
            t = a.t()  # not contiguous
            self.assertEqual(tensor_checksum(t), tensor_checksum(t.contiguous()))
            # Swapping two whole pieces changes the checksum (per-piece multipliers).
            flat = torch.randn(32)
            swapped = torch.cat([flat[8:16], flat[:8], flat[16:]])
            self.assertNotEqual(tensor_checksum(flat), tensor_checksum(swapped))
            d = torch.randn(20, dtype=torch.float64)  # two words per element
            e = d.clone()
            e[19] = -e[19]
            self.assertNotEqual(tensor_checksum(d), tensor_checksum(e))

    def test_structures(self) -> None:
        x = [torch.ones(3), (torch.zeros(2), 5)]
        self.assertEqual(checksum.checksum(x), checksum.checksum([torch.ones(3), (torch.zeros(2), 7)]))
        self.assertEqual(len(checksum.checksum(x)), 2)


if __name__ == "__main__":
    unittest.main()
