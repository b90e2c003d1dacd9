import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum of two large tensors (residual add). (kagent GPU test problem: 2_Add)"""

    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x + y


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
