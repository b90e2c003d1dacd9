"""Broken: stores 2**40 elements past the output (illegal memory access)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _oob_kernel(x_ptr, y_ptr, out_ptr, n, far, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs, mask=mask, other=0.0) + tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + far + offs, s, mask=mask)


def kernel_function(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    _oob_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, 1 << 40, BLOCK=1024)
    return out
