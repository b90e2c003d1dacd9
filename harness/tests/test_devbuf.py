"""Shared buffers: device buffers (devbuf.py) by default on an NVIDIA GPU
(KAGENT_DEVICE_BUFFERS=0 turns them off), host slots otherwise."""

from __future__ import annotations

import os
import unittest

import torch

from kagent_harness import devbuf, shm


class SlotChoiceTest(unittest.TestCase):
    @unittest.skipIf(torch.cuda.is_available(), "a GPU is here: device buffers are what this machine gives")
    def test_host_slots_without_a_gpu(self) -> None:
        old = os.environ.get("KAGENT_DEVICE_BUFFERS")
        os.environ["KAGENT_DEVICE_BUFFERS"] = "1"
        try:
            slot = shm.new_slot(1, 1 << 20, cuda=True)
            self.assertIsInstance(slot, shm.Slot)
            self.assertEqual(slot.describe()[0]["kind"], "memfd")
            slot.close()
        finally:
            if old is None:
                del os.environ["KAGENT_DEVICE_BUFFERS"]
            else:
                os.environ["KAGENT_DEVICE_BUFFERS"] = old

    def test_on_by_default_on_an_nvidia_gpu(self) -> None:
        from unittest import mock

        old = os.environ.pop("KAGENT_DEVICE_BUFFERS", None)
        try:
            with mock.patch("torch.cuda.is_available", return_value=True), \
                    mock.patch.object(torch.version, "hip", None):
                self.assertTrue(devbuf.enabled(), "on by default")
                os.environ["KAGENT_DEVICE_BUFFERS"] = "0"
                self.assertFalse(devbuf.enabled(), "KAGENT_DEVICE_BUFFERS=0 turns them off")
                os.environ["KAGENT_DEVICE_BUFFERS"] = "1"
                self.assertTrue(devbuf.enabled())
            with mock.patch("torch.cuda.is_available", return_value=True), \
                    mock.patch.object(torch.version, "hip", "6.2"):
                self.assertFalse(devbuf.enabled(), "NVIDIA only")
            with mock.patch("torch.cuda.is_available", return_value=False):
                self.assertFalse(devbuf.enabled(), "no GPU")
        finally:
            os.environ.pop("KAGENT_DEVICE_BUFFERS", None)
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


class DeviceFullTest(unittest.TestCase):
    """Where the device is full, the room hook runs and the allocation is
    tried again; a slot that still cannot be made is a host slot, and device
    buffers stay on for the next one. Other driver failures turn them off.
    (DeviceSlot stands in for the driver here.)"""

    def setUp(self) -> None:
        self.saved = (shm.DeviceSlot, devbuf.enabled, list(shm._device_slots_failed))
        devbuf.enabled = lambda: True  # type: ignore[assignment]
        shm._device_slots_failed.clear()
        self.calls = 0
        self.freed = []

    def tearDown(self) -> None:
        shm.DeviceSlot, devbuf.enabled, failed = self.saved  # type: ignore[misc]
        shm._device_slots_failed[:] = failed
        shm.set_room_hook(None)

    def fake(self, fail_times: int, code: int) -> None:
        test = self

        class Fake:
            def __init__(self, sid: int, nbytes: int) -> None:
                test.calls += 1
                if test.calls <= fail_times:
                    raise devbuf.DriverError("cuMemCreate failed", code)
                self.kind = "device"

        shm.DeviceSlot = Fake  # type: ignore[misc,assignment]

    def test_room_made_then_device_slot(self) -> None:
        self.fake(1, devbuf.CUDA_ERROR_OUT_OF_MEMORY)
        shm.set_room_hook(self.freed.append)
        slot = shm.new_slot(1, 1 << 20, cuda=True)
        self.assertEqual(getattr(slot, "kind", None), "device")
        self.assertEqual(self.freed, [1 << 20])

    def test_still_full_gives_a_host_slot_and_stays_on(self) -> None:
        self.fake(2, devbuf.CUDA_ERROR_OUT_OF_MEMORY)
        shm.set_room_hook(self.freed.append)
        slot = shm.new_slot(1, 1 << 20, cuda=True)
        self.assertIsInstance(slot, shm.Slot)
        slot.close()
        self.assertEqual(shm._device_slots_failed, [])
        self.assertEqual(getattr(shm.new_slot(2, 1 << 20, cuda=True), "kind", None), "device")

    def test_other_driver_errors_turn_device_buffers_off(self) -> None:
        self.fake(1, 801)  # CUDA_ERROR_NOT_SUPPORTED
        slot = shm.new_slot(1, 1 << 20, cuda=True)
        self.assertIsInstance(slot, shm.Slot)
        slot.close()
        self.assertEqual(len(shm._device_slots_failed), 1)
        other = shm.new_slot(2, 1 << 20, cuda=True)
        self.assertIsInstance(other, shm.Slot)
        other.close()
        self.assertEqual(self.calls, 1)


@unittest.skipUnless(torch.cuda.is_available() and not getattr(torch.version, "hip", None), "needs an NVIDIA GPU")
class DeviceBufferTest(unittest.TestCase):
    def test_exported_allocation_is_shared_with_another_process(self) -> None:
        result = devbuf.self_test()
        self.assertTrue(result["passed"], result)


if __name__ == "__main__":
    unittest.main()
