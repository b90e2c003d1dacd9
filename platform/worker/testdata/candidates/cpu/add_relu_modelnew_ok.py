"""Correct: ModelNew style with a helper function."""
import torch
import torch.nn as nn


def _relu_add(x, y):
    s = x + y
    return s * (s > 0).to(s.dtype)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return _relu_add(x, y)
