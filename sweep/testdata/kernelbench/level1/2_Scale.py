import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiply by a constant. (kagent-test problem: 2_Scale)"""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x * self.scale


batch_size = 32
dim = 256


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return [2.5]
