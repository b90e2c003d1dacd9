"""An elementwise op: y = relu(x) * 2 + 1."""
import torch
import torch.nn as nn

batch_size = 32
dim = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0 + 1.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
