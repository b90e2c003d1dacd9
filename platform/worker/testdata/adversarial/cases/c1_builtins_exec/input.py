# adversarial: class 1
# technique: builtins reached as sys.modules['builtins'] through a for target; exec() defines a helper that imports torch.nn.functional
# problem: linear
# expect: reject
import sys
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include tcopy@@

for _s in (sys,):
    _B = _s.modules["builtins"]
_NS = {}
_B.exec("import torch.nn.functional as F\ndef lin(x, w, b):\n    return F.linear(x, w, b)\n", _NS)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return tcopy(_NS["lin"](x, self.fc.weight, self.fc.bias))
