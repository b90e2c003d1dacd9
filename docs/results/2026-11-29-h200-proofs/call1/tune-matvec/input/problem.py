import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product y = A @ x with A of shape [M, K] and x of shape
    [K, 1] (as in KernelBench level 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 8192
K = 32768


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, 1)
    return [A, B]


def get_init_inputs():
    return []
