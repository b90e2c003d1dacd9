# adversarial: class 2
# technique: forged replies printed to sys.stdout and sys.__stdout__ (fd 1 is stderr in the worker, so this should reach nothing)
# problem: scale
# expect: reject time
import sys
import json
import os
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include fake_replies@@

for _line in fake_reply_lines():
    print(_line, end="", flush=True)
    sys.__stdout__.write(_line)
sys.__stdout__.flush()


def kernel_function(x):
    return tcopy(torch.zeros_like(x))  # wrong: only the forged replies can pass it
