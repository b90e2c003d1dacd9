# adversarial: class 3
# technique: the work runs in a forked child (os.fork through a for target) writing shared memory while the parent waits: the CPU clock (time.process_time) does not count children
# problem: rowsum
# expect: time
import os
import sys
import torch
import triton
import triton.language as tl

# @@include tcopy@@
# @@include honest_rowsum@@
# @@include memo@@


for _o in (os,):
    _fork, _wait, _exit = _o.fork, _o.waitpid, _o._exit


def kernel_function(x):
    out = torch.empty((x.shape[0],), device=x.device, dtype=x.dtype).share_memory_()
    pid = _fork()
    if pid == 0:
        out.copy_(rowsum(x))
        _exit(0)
    _wait(pid, 0)
    touch(x)
    return out
