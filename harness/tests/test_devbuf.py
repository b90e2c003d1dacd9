"""Shared buffers: host slots by default, device buffers (devbuf.py) only on
request and on an NVIDIA GPU, falling back to host slots otherwise."""

from __future__ import annotations

import os
import unittest

import torch

from kagent_harness import devbuf, shm


class SlotChoiceTest(unittest.TestCase):
    def test_host_slots_without_a_gpu(self) -> None:
        old = os.environ.get("KAGENT_DEVICE_BUFFERS")
        os.environ["KAGENT_DEVICE_BUFFERS"] = "1"
        try:
            slot = shm.new_slot(1, 1 << 20, cuda=False)
            self.assertIsInstance(slot, shm.Slot)
            self.assertEqual(slot.describe()[0]["kind"], "memfd")
            slot.close()
        finally:
            if old is None:
                del os.environ["KAGENT_DEVICE_BUFFERS"]
            else:
                os.environ["KAGENT_DEVICE_BUFFERS"] = old

    def test_off_unless_asked(self) -> None:
        old = os.environ.pop("KAGENT_DEVICE_BUFFERS", None)
        try:
            self.assertFalse(devbuf.enabled())
        finally:
            if old is not None:
                os.environ["KAGENT_DEVICE_BUFFERS"] = old

    def test_unknown_slot_kind_refused(self) -> None:
        r, w = os.pipe()
        try:
            with self.assertRaises(ValueError):
                shm.open_slot({"id": 1, "nbytes": 16, "kind": "other"}, [r])
        finally:
            os.close(r)
            os.close(w)


@unittest.skipUnless(torch.cuda.is_available() and not getattr(torch.version, "hip", None), "needs an NVIDIA GPU")
class DeviceBufferTest(unittest.TestCase):
    def test_exported_allocation_is_shared_with_another_process(self) -> None:
        result = devbuf.self_test()
        self.assertTrue(result["passed"], result)


if __name__ == "__main__":
    unittest.main()
