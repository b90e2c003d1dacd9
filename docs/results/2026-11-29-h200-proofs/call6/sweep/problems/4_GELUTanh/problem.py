import torch
import torch.nn as nn


class Model(nn.Module):
    """GELU with the tanh approximation. (kagent GPU test problem: 4_GELUTanh)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
