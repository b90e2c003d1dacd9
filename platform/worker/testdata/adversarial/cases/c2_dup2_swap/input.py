# adversarial: class 2
# technique: forged replies are written, then dup2 points the reply fd at stderr so the real verdicts never reach the supervisor
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
    _fd = reply_fd()
    for _line in fake_reply_lines():
        _o.write(_fd, _line.encode())
    _o.dup2(2, _fd)


def kernel_function(x):
    return tcopy(torch.zeros_like(x))  # wrong: only the forged replies can pass it
