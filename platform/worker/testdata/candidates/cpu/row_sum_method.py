"""Cheat: the tensor-method form of a reduction."""
import torch


def kernel_function(x):
    return x.sum(dim=1)
