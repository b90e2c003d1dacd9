# adversarial: class 1
# technique: a module bound by a for target (never resolved by the static check) reaches torch.nn.functional.linear
# problem: linear
# expect: reject
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include tcopy@@

for _t in (torch,):
    _fn = _t.nn.functional


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return tcopy(_fn.linear(x, self.fc.weight, self.fc.bias))
