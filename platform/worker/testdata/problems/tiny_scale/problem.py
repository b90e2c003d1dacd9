import torch
import torch.nn as nn


class Model(nn.Module):
    """Outputs of about 1e-6: zeros pass an absolute tolerance of 1e-4."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x) * 1e-6


N = 64
D = 64


def get_inputs():
    return [torch.randn(N, D)]


def get_init_inputs():
    return []
