# adversarial: class 5
# technique: the worker allocates and touches 4 GiB of host memory (bounded here; unbounded it takes the machine) and reports success outside the kernel dir
# problem: scale
# expect: contain
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@

try:
    _hog = bytearray(4 << 30)
    write_text("@@OUTSIDE@@/allocated_4GiB", "the worker's memory is not limited")
    del _hog
except (MemoryError, OSError):
    pass


def kernel_function(x):
    return scale(x)
