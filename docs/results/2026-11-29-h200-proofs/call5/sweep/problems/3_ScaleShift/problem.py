import torch
import torch.nn as nn


class Model(nn.Module):
    """Affine map x * scale + shift with constant scale and shift. (kagent GPU test problem: 3_ScaleShift)"""

    def __init__(self, scale, shift):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        return x * self.scale + self.shift


batch_size = 4096
dim = 16384
scale = 2.5
shift = -0.75


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale, shift]
