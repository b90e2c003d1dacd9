"""Correct: matmul as a sum of outer products (elementwise ops only)."""
import torch


def kernel_function(a, b):
    m, k = a.shape
    n = b.shape[1]
    out = torch.zeros(m, n, dtype=a.dtype, device=a.device)
    for i in range(k):
        out = out + a[:, i : i + 1] * b[i : i + 1, :]
    return out
