# adversarial: class 5
# technique: an allowed logging.FileHandler creates a file outside the kernel dir
# problem: scale
# expect: contain
import logging
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@

_h = logging.FileHandler("@@OUTSIDE@@/marker.log")
_h.emit(logging.makeLogRecord({"msg": "written by a kernel"}))
_h.close()


def kernel_function(x):
    return scale(x)
