# adversarial: class 3
# technique: time.process_time (the cpu clock) replaced through a for target by one that runs at a hundredth of the speed
# problem: rowsum
# expect: time
import time
import os
import sys
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include honest_rowsum@@
# @@include memo@@


for _tm in (time,):
    _pt = _tm.process_time
    _tm.process_time = lambda: _pt() / 100.0


def kernel_function(x):
    return rowsum(x)
