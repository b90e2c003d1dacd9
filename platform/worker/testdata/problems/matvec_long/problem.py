import torch
import torch.nn as nn


class Model(nn.Module):
    """y = A @ x as a row sum, with a long reduction over all-positive inputs.
    The reference's tree summation is accurate to about 1e-8; an fp32 kernel that
    adds 16-column pieces one after another is off by about 5e-7, a quarter of
    what rounding the operands to TF32 costs (2e-6)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, x):
        return (a * x.t()).sum(dim=1, keepdim=True)


M = 256
K = 32768


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]


def get_init_inputs():
    return []
