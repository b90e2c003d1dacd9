# adversarial: class 3
# technique: results cached by a sparse sample of the input (every 97th element): honest on new inputs, a stored copy on inputs whose sample was seen before (every timed call)
# problem: rowsum
# expect: reject time
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include honest_rowsum@@
# @@include memo@@


def kernel_function(x):
    key = (tuple(x.shape), tuple(x.reshape(-1)[::97].tolist()))
    hit = _SEEN.get(key)
    if hit is not None:
        touch(x)
        return hit.clone()
    out = rowsum(x)
    _SEEN[key] = out.clone()
    return out
