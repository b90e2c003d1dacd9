# adversarial: class 1
# technique: torch stored in a dict; torch.tensordot (a matrix product) called through it
# problem: linear
# expect: reject
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include tcopy@@

_OPS = {"t": torch}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return tcopy(_OPS["t"].tensordot(x, self.fc.weight, dims=([1], [1])) + self.fc.bias)
