import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise ReLU of a large activation tensor. (kagent GPU test problem: 1_ReLU)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
