"""Cheat: allocates with torch.empty and writes only the first half of the rows."""
import torch


def kernel_function(x, y):
    out = torch.empty_like(x)
    half = x.shape[0] // 2
    s = x[:half] + y[:half]
    out[:half] = s * (s > 0).to(s.dtype)
    return out
