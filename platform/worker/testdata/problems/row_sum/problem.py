import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over dim 1 of an [N, D] tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


N = 32
D = 64


def get_inputs():
    return [torch.rand(N, D)]


def get_init_inputs():
    return []
