import torch
import torch.nn as nn


class Model(nn.Module):
    """Swish activation: x * sigmoid(x). (kagent-test problem: 6_Swish)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size = 32
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
