"""Cheat: returns a lazy tensor subclass."""
import torch


class Lazy(torch.Tensor):
    pass


def kernel_function(x, y):
    s = x + y
    return (s * (s > 0).to(s.dtype)).as_subclass(Lazy)
