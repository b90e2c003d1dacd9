# adversarial: class 1
# technique: torch passed as a function argument; the helper calls torch.nn.functional.linear through it
# problem: linear
# expect: reject
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include tcopy@@


def _apply(mod, x, w, b):
    return mod.nn.functional.linear(x, w, b)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return tcopy(_apply(torch, x, self.fc.weight, self.fc.bias))
