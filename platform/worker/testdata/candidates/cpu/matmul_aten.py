"""Cheat: calls the ATen op directly."""
import torch


def kernel_function(a, b):
    return torch.ops.aten.mm.default(a, b)
