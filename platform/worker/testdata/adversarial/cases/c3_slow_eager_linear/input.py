# adversarial: class 3
# technique: torch.nn.Linear.forward (not watched) patched through a for target to run 200 times: the eager and compile baselines, timed later in the same process, slow down
# problem: linear
# expect: time
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include honest_linear@@

for _L in (nn.Linear,):
    _orig = _L.forward

    def _slow(self, x):
        out = None
        for _ in range(200):
            out = _orig(self, x)
        return out

    _L.forward = _slow


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return linear(x.contiguous(), self.fc.weight, self.fc.bias)
