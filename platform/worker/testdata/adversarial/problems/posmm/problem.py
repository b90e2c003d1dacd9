"""A long all-positive matrix product: fp16/TF32 operands stay inside the
element tolerance here, so only the precision check can tell them apart."""
import torch
import torch.nn as nn

M = 16
K = 4096
N = 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
