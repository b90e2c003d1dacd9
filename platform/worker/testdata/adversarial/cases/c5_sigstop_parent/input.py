# adversarial: class 5
# technique: the worker sends SIGSTOP to its parent, kagent, which then waits forever
# problem: scale
# expect: contain
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@

for _o in (os,):
    _o.kill(_o.getppid(), 19)  # SIGSTOP


def kernel_function(x):
    return scale(x)
