# adversarial: class 5
# technique: 64 MiB written into $TMPDIR and left there
# problem: scale
# expect: contain
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@

torch.save(torch.zeros(16 << 20), os.path.join(os.environ.get("TMPDIR", "/tmp"), "adv_fill.pt"))


def kernel_function(x):
    return scale(x)
