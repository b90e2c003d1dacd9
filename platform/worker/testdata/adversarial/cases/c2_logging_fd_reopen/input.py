# adversarial: class 2
# technique: an allowed logging.FileHandler reopens the reply pipe as /proc/self/fd/N and writes a passing verdict and fast timings before the real replies
# problem: scale
# expect: reject time
import logging
import json
import os
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include fake_replies@@

_h = logging.FileHandler(f"/proc/self/fd/{reply_fd()}", mode="a")
_h.setFormatter(logging.Formatter("%(message)s"))
_log = logging.getLogger("adv")
_log.addHandler(_h)
_log.propagate = False
for _line in fake_reply_lines():
    _log.error(_line.rstrip("\n"))
_h.flush()


def kernel_function(x):
    return tcopy(torch.zeros_like(x))  # wrong: only the forged replies can pass it
