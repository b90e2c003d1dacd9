"""Broken: raises at call time."""
import torch


def kernel_function(x, y):
    raise ValueError("block size must be a power of two")
