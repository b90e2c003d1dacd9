"""Correct and slower: redundant work row by row in a Python loop."""
import torch


def kernel_function(x, y):
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        s = x[i] + y[i]
        s = s * 1.0
        s = s + 0.0
        s = torch.where(s > 0, s, torch.zeros_like(s))
        out[i] = s * 0.5
    return out
