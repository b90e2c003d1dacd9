# adversarial: class 3
# technique: fp16-rounded operands on every call (the control of c3_precision_after_first: the precision check must catch this)
# problem: posmm
# expect: reject
import torch
import triton
import triton.language as tl

# @@include honest_posmm@@


def kernel_function(a, b):
    return posmm(a, b, low=True)
