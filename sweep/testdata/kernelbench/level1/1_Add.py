import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise sum. (kagent-test problem: 1_Add)"""

    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x + y


batch_size = 32
dim = 256


def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
