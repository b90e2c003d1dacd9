"""Cheat: falls back to torch.matmul."""
import torch


def kernel_function(a, b):
    return torch.matmul(a, b)
