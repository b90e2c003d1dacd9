import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise square. (kagent-test problem: 4_Square)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * x


batch_size = 32
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
