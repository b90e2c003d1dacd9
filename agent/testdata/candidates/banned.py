"""Banned: a reduction outside a kernel (and a wrong one at that)."""
import torch


def kernel_function(x, y):
    s = x + y
    return s * (s.sum() > -1e30).to(s.dtype) * 0.5
