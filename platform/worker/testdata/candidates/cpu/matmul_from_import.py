"""Cheat: imports the op under another name."""
from torch import matmul as mm


def kernel_function(a, b):
    return mm(a, b)
