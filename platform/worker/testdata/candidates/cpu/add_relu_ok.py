"""Correct: kernel_function style, elementwise torch ops only."""
import torch


def kernel_function(x, y):
    s = x + y
    out = torch.empty_like(s)
    out.copy_(torch.where(s > 0, s, torch.zeros_like(s)))
    return out
