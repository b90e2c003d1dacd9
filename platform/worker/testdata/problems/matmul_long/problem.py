import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B with a long reduction over all-positive inputs (operands rounded to nearest at TF32 or fp16 width stay inside the fp32 tolerance)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 32
K = 2048
N = 48


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
