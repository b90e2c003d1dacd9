# adversarial: class 1
# technique: a parameter named getattr (default: the builtin) is a bound name, so the dynamic lookup of a name built at run time is not checked; it finds torch.matmul
# problem: linear
# expect: reject
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include tcopy@@


def _lookup(obj, name, getattr=getattr):
    return getattr(obj, name)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        op = _lookup(torch, "mat" + "mul")
        return tcopy(op(x, self.fc.weight.t()) + self.fc.bias)
