# adversarial: class 1
# technique: torch stored in a list; torch.einsum called through the container
# problem: linear
# expect: reject
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include tcopy@@

_MODS = [torch]


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return tcopy(_MODS[0].einsum("ik,nk->in", x, self.fc.weight) + self.fc.bias)
