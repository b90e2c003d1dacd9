import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the last dimension of a matrix. (kagent GPU test problem: 5_RowSum)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1)


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
