"""Correct: a row sum with tl.sum, one program per row."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, D, stride, BLOCK_D: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for start in range(0, D, BLOCK_D):
        cols = start + offs
        v = tl.load(x_ptr + row * stride + cols, mask=cols < D, other=0.0)
        acc += v.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def kernel_function(x):
    x = x.contiguous()
    n, d = x.shape
    out = torch.empty(n, device=x.device, dtype=x.dtype)
    _row_sum_kernel[(n,)](x, out, d, x.stride(0), BLOCK_D=32)
    return out
