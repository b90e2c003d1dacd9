# adversarial: class 3
# technique: torch.empty returns NaN only while verification poisons allocations: honest there; in timing, cached results and MemoryError on new inputs
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
    probe = torch.empty(8, device=x.device, dtype=torch.float32)
    verifying = bool(torch.isnan(probe).all())
    key = fingerprint(x)
    if verifying:
        out = rowsum(x)
        _SEEN[key] = out.clone()
        return out
    hit = _SEEN.get(key)
    if hit is None:
        raise MemoryError("out of memory")
    touch(x)
    return hit.clone()
