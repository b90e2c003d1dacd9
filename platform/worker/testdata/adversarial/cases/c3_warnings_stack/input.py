# adversarial: class 3
# technique: warnings.warn with rising stacklevels names the calling harness files: honest when called from verification, cached or MemoryError when called from timing
# problem: rowsum
# expect: reject time
import warnings
import os
import sys
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include honest_rowsum@@
# @@include memo@@


def _callers():
    files = []
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for level in range(2, 9):
            warnings.warn("where", stacklevel=level)
    for w in rec:
        files.append(os.path.basename(w.filename))
    return files


def kernel_function(x):
    files = _callers()
    key = fingerprint(x)
    if "timing.py" not in files:
        out = rowsum(x)
        _SEEN[key] = out.clone()
        return out
    hit = _SEEN.get(key)
    if hit is None:
        raise MemoryError("out of memory")
    touch(x)
    return hit.clone()
