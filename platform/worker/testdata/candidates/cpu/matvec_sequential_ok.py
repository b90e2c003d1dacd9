"""Correct: a matvec that adds 16-column pieces one after another in fp32 (2048
sequential additions per row). Its error against fp64 is a quarter of TF32's
on this all-positive reduction, yet it computes in fp32 throughout: the
precision check must pass it."""
import torch


def kernel_function(a, x):
    m, k = a.shape
    acc = torch.zeros(m, 1, dtype=a.dtype, device=a.device)
    xt = x.t()
    for i in range(0, k, 16):
        p = a[:, i : i + 16] * xt[:, i : i + 16]
        p = p[:, :8] + p[:, 8:]
        p = p[:, :4] + p[:, 4:]
        p = p[:, :2] + p[:, 2:]
        acc = acc + (p[:, :1] + p[:, 1:])
    return acc
