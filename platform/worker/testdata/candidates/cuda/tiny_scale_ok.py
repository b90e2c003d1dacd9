"""Correct: tanh(x) * 1e-6, tanh from exp (accurate near 0)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _tiny_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.exp(-2.0 * tl.abs(x))
    r = (1.0 - t) / (1.0 + t)
    r = tl.where(x < 0, -r, r)
    tl.store(out_ptr + offs, r * 1e-6, mask=mask)


def kernel_function(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _tiny_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
