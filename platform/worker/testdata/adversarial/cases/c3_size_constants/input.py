# adversarial: class 3
# technique: the problem module's batch_size (found in sys.modules) is set to 1 at import: the unseen draws shrink to one row, so honest work on them is as fast as the cached timed calls
# problem: rowsum
# expect: reject time
import os
import sys
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include honest_rowsum@@
# @@include memo@@


for _s in (sys,):
    for _name, _m in list(_s.modules.items()):
        if _name.startswith("kagent_problem"):
            _m.batch_size = 1


def kernel_function(x):
    key = fingerprint(x)
    hit = _SEEN.get(key)
    if hit is not None:
        touch(x)
        return hit.clone()
    out = rowsum(x)
    _SEEN[key] = out.clone()
    return out
