"""Correct: a reduction written as a loop of elementwise adds."""
import torch


def kernel_function(x):
    n, d = x.shape
    acc = torch.zeros(n, dtype=x.dtype, device=x.device)
    for j in range(d):
        acc = acc + x[:, j]
    return acc
