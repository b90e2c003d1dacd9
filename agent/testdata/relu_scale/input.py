"""Correct but wasteful: six passes over the data where two would do."""
import torch


def kernel_function(x, y):
    s = x + y
    s = s * 1.0
    s = s + 0.0
    keep = s > 0
    out = torch.where(keep, s, torch.zeros_like(s))
    return out * 0.5
