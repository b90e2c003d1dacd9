import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalisation of each row (no weight), eps 1e-6. (kagent GPU test problem: 7_RMSNormRows)"""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-6)


batch_size = 8192
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
