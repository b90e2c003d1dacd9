# adversarial: class 5
# technique: torch.save writes a file outside the kernel dir
# problem: scale
# expect: contain
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@

torch.save(torch.zeros(4), "@@OUTSIDE@@/marker.pt")


def kernel_function(x):
    return scale(x)
