"""Correct, but reads stdin at import and during the call: stdin is /dev/null
for candidates, so no request is consumed."""
import sys

import torch

_seen = sys.stdin.read()


def kernel_function(x, y):
    sys.stdin.readline()
    s = x + y
    return s * (s > 0).to(s.dtype)
