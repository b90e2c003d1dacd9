"""Fault: unbounded recursion."""
import torch


def _down(n):
    return _down(n + 1) + 1


def kernel_function(x, y):
    return x + _down(0)
