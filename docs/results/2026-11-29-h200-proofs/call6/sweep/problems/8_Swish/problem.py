import torch
import torch.nn as nn


class Model(nn.Module):
    """Swish (SiLU) activation x * sigmoid(x). (kagent GPU test problem: 8_Swish)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
