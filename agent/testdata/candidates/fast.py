"""Faster: two passes (add, then an in-place clamp and scale)."""
import torch


def kernel_function(x, y):
    s = x + y
    s.clamp_min_(0.0)
    s.mul_(0.5)
    return s
