"""Device selection: cpu always; xpu and cuda only where torch has them."""

import unittest

import torch

from kagent_harness.device import Device


class DeviceTest(unittest.TestCase):
    def test_cpu(self) -> None:
        d = Device("cpu")
        self.assertFalse(d.is_gpu)
        self.assertFalse(d.is_cuda)
        self.assertEqual(d.info()["type"], "cpu")
        self.assertIsNone(d.health_check())

    def test_unknown_kind(self) -> None:
        with self.assertRaises(ValueError) as cm:
            Device("tpu")
        self.assertIn("want cuda, xpu or cpu", str(cm.exception))

    def test_xpu_without_torch_xpu(self) -> None:
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():
            self.skipTest("this torch has a usable XPU")
        with self.assertRaises(RuntimeError) as cm:
            Device("xpu")
        self.assertIn("torch.xpu", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
