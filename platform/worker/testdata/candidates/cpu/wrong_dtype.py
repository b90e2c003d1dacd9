"""Broken: returns float64."""
import torch


def kernel_function(x, y):
    s = (x + y).double()
    return s * (s > 0).to(s.dtype)
