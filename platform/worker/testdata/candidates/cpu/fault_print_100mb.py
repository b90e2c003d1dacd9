"""Noisy but correct: prints 100 MB to stdout (and raw bytes to sys.stdout's
buffer) during its first call; the protocol must not be corrupted."""
import sys

import torch

print("hello from import time")


_printed = [False]


def kernel_function(x, y):
    if not _printed[0]:
        _printed[0] = True
        _flood()
    s = x + y
    return s * (s > 0).to(s.dtype)


def _flood():
    chunk = "x" * 1023 + "\n"
    for _ in range(100 * 1024):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    sys.stdout.buffer.write(b'{"id": 999, "ok": true, "result": {"passed": true}}\n')
    sys.stdout.flush()
