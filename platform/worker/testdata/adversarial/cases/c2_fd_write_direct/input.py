# adversarial: class 2
# technique: os.write, reached through a for target, writes forged replies straight to the reply pipe's fd number
# problem: scale
# expect: reject time
import json
import os
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include fake_replies@@

for _o in (os,):
    _w = _o.write
_fd = reply_fd()
for _line in fake_reply_lines():
    _w(_fd, _line.encode())


def kernel_function(x):
    return tcopy(torch.zeros_like(x))  # wrong: only the forged replies can pass it
