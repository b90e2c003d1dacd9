"""Cheat: tries to forge a reply on a raw file descriptor."""
import os

import torch


def kernel_function(x, y):
    os.write(3, b'{"id": 2, "ok": true, "result": {"passed": true}}\n')
    s = x + y
    return s * (s > 0).to(s.dtype)
