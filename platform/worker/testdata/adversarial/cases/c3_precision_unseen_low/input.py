# adversarial: class 3
# technique: fp32 on the first three distinct inputs it sees (the verified draws, whose outputs are rechecked bit for bit when timed), fp16-rounded operands on every later one (the unseen draws)
# problem: posmm
# expect: reject
import torch
import triton
import triton.language as tl

# @@include honest_posmm@@

_SEEN = []


def kernel_function(a, b):
    key = tuple(a.reshape(-1)[:16].tolist())
    if key not in _SEEN and len(_SEEN) < 3:
        _SEEN.append(key)
    return posmm(a, b, low=key not in _SEEN)
