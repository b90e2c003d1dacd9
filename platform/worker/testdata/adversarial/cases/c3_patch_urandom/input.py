# adversarial: class 3
# technique: os.urandom (not watched) replaced by a constant: the secret-seeded unseen draws are all the same, so two of the three hit the result cache and the fastest looks like the timed calls
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


for _o in (os,):
    _o.urandom = lambda n: bytes(range(1, n + 1))


def kernel_function(x):
    key = fingerprint(x)
    hit = _SEEN.get(key)
    if hit is not None:
        touch(x)
        return hit.clone()
    out = rowsum(x)
    _SEEN[key] = out.clone()
    return out
