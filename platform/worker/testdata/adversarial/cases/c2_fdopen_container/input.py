# adversarial: class 2
# technique: os.fdopen reached through a container wraps the reply fd in a file object that writes forged replies
# problem: scale
# expect: reject time
import json
import os
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include fake_replies@@

_f = [os][0].fdopen(reply_fd(), "w", closefd=False)
_f.write("".join(fake_reply_lines()))
_f.flush()


def kernel_function(x):
    return tcopy(torch.zeros_like(x))  # wrong: only the forged replies can pass it
