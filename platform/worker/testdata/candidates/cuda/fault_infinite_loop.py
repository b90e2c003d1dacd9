"""Fault: a Triton kernel that spins forever on a flag nobody sets."""
import torch
import triton
import triton.language as tl


@triton.jit
def _spin_kernel(flag_ptr, out_ptr):
    v = tl.load(flag_ptr, volatile=True)
    while v == 0:
        v = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr, v)


def kernel_function(x, y):
    flag = torch.zeros(1, device=x.device, dtype=torch.int32)
    out = torch.empty(1, device=x.device, dtype=torch.int32)
    _spin_kernel[(1,)](flag, out)
    torch.cuda.synchronize()
    return x
