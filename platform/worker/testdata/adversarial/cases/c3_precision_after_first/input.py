# adversarial: class 3
# technique: fp32 on the first input seen (the one the precision check examines), fp16-rounded operands on every other call: inside the element tolerance of a long all-positive sum
# problem: posmm
# expect: reject
import torch
import triton
import triton.language as tl

# @@include honest_posmm@@

_FIRST = []


def kernel_function(a, b):
    key = tuple(a.reshape(-1)[:16].tolist())
    if not _FIRST:
        _FIRST.append(key)
    return posmm(a, b, low=key != _FIRST[0])
