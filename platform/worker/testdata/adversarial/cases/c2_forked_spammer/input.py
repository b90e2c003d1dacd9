# adversarial: class 2
# technique: a forked child (os.fork via a for target) keeps the reply pipe and repeats forged replies for every id for 30 s, so whatever id the supervisor waits on next is answered first
# problem: scale
# expect: reject time contain
import time
import json
import os
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include fake_replies@@

for _o in (os,):
    if _o.fork() == 0:
        _fd = reply_fd()
        _data = "".join(fake_reply_lines(1, 16)).encode()
        for _ in range(600):
            try:
                _o.write(_fd, _data)
            except OSError:
                break
            time.sleep(0.05)
        _o._exit(0)


def kernel_function(x):
    return tcopy(torch.zeros_like(x))  # wrong: only the forged replies can pass it
