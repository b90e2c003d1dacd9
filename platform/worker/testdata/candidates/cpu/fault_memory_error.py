"""Fault: raises MemoryError."""
import torch


def kernel_function(x, y):
    raise MemoryError("simulated host allocation failure")
