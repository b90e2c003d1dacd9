# The same kernel as fast.py, written differently: comments and blank lines only.
"""Faster: two passes (add, then an in-place clamp and scale)."""
import torch



def kernel_function(x, y):
    s = x + y          # one pass
    s.clamp_min_(0.0)  # in place
    s.mul_(0.5)
    return s
