# adversarial: class 3
# technique: results cached by input content (shape and first values): honest on new inputs, a stored copy on inputs seen before (every timed call)
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
    out = rowsum(x)
    _SEEN[key] = out.clone()
    return out
