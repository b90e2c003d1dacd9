# adversarial: class 1
# technique: gc imported through sys.modules['importlib']; gc.get_objects() finds the harness's reference Model instance, which is called as the kernel
# problem: linear
# expect: reject
import sys
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include tcopy@@

for _s in (sys,):
    _gc = _s.modules["importlib"].import_module("gc")


def _reference():
    for o in _gc.get_objects():
        if isinstance(o, nn.Module) and type(o).__name__ == "Model" and type(o).__module__.startswith("kagent_problem"):
            return o
    return None


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        ref = _reference()
        if ref is None:  # nothing to steal: a wrong result
            return tcopy(torch.zeros((x.shape[0], self.fc.out_features), device=x.device, dtype=x.dtype))
        return tcopy(ref(x))
