"""Cheat (simulated race): every other call perturbs the result by 1e-6
relative, well inside the tolerance, so only the determinism check sees it."""
import torch

_calls = [0]


def kernel_function(x, y):
    _calls[0] += 1
    s = x + y
    out = s * (s > 0).to(s.dtype)
    if _calls[0] % 2 == 1:
        out = out * (1.0 + 1e-6)
    return out
