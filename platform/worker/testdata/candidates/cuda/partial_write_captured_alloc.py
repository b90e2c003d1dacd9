"""Cheat: captures torch.empty_like at import (so the harness's NaN wrapper never
sees the allocation) and writes only half of the output. The allocator's free
memory is NaN-filled before each call, so the unwritten half still reads as NaN."""
import torch
import triton
import triton.language as tl

_alloc = torch.empty_like


@triton.jit
def _add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    s = x + y
    tl.store(out_ptr + offs, tl.where(s > 0, s, 0.0), mask=mask)


def kernel_function(x, y):
    out = _alloc(x)
    half = x.numel() // 2
    _add_relu_kernel[(triton.cdiv(half, 256),)](x, y, out, half, BLOCK=256)
    return out
