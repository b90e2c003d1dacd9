import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x * weight + bias, per channel (weights are nn.Parameters)."""

    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(channels))
        self.bias = nn.Parameter(torch.randn(channels))

    def forward(self, x):
        return x * self.weight + self.bias


N = 16
C = 64


def get_inputs():
    return [torch.randn(N, C)]


def get_init_inputs():
    return [C]
