# adversarial: class 5
# technique: a bounded fork bomb: 32 children, each in a session of its own, sleeping 120 s
# problem: scale
# expect: contain
import time
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@

for _o in (os,):
    _fork, _setsid, _exit = _o.fork, _o.setsid, _o._exit
for _i in range(32):
    if _fork() == 0:
        _setsid()
        time.sleep(120)
        _exit(0)


def kernel_function(x):
    return scale(x)
