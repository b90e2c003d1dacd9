import torch
import torch.nn as nn


class Model(nn.Module):
    """alpha * x + beta * y. (kagent-test problem: 5_Axpby)"""

    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x, y):
        return self.alpha * x + self.beta * y


batch_size = 32
dim = 256


def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size, dim)]


def get_init_inputs():
    return [0.5, 2.0]
