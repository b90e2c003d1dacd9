# adversarial: class 3
# technique: torch.manual_seed made a no-op and the RNG reset to a known state after each call, so the unseen draws repeat and hit the cache
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


for _t in (torch,):
    _seed = _t.manual_seed
    _t.manual_seed = lambda s: None


def kernel_function(x):
    key = fingerprint(x)
    hit = _SEEN.get(key)
    if hit is not None:
        touch(x)
        out = hit.clone()
    else:
        out = rowsum(x)
        _SEEN[key] = out.clone()
    _seed(1234)
    return out
