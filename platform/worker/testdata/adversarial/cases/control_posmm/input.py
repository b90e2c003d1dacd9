# adversarial: control
# problem: posmm
# expect: pass
# technique: an honest fp32 Triton matrix product with a long all-positive sum
import torch
import triton
import triton.language as tl

# @@include honest_posmm@@


def kernel_function(a, b):
    return posmm(a, b)
