# adversarial: class 5
# technique: the worker kills itself with SIGKILL in the middle of verification (no cleanup code of its own runs)
# problem: scale
# expect: contain
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@


def kernel_function(x):
    for _o in (os,):
        _o.kill(_o.getpid(), 9)
    return scale(x)
