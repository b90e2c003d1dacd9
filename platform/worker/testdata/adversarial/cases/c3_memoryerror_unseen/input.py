# adversarial: class 3
# technique: after the three verified draws, an input never seen raises MemoryError (the unseen-input check takes that for the device's memory and skips); seen inputs get a cached result
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


def kernel_function(x):
    key = fingerprint(x)
    hit = _SEEN.get(key)
    if hit is not None:
        touch(x)
        return hit.clone()
    if len(_SEEN) >= 3:
        raise MemoryError("out of memory")  # an unseen draw: not the kernel's fault, says the harness
    out = rowsum(x)
    _SEEN[key] = out.clone()
    return out
