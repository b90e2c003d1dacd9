"""Correct with atomics (order-dependent): each row is split over 4 programs that
atomically add partial sums. Needs atomics: true."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_split_kernel(x_ptr, out_ptr, D, stride, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    cols = part * CHUNK + tl.arange(0, CHUNK)
    v = tl.load(x_ptr + row * stride + cols, mask=cols < D, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(v.to(tl.float32), axis=0))


def kernel_function(x):
    x = x.contiguous()
    n, d = x.shape
    out = torch.zeros(n, device=x.device, dtype=torch.float32)
    _row_sum_split_kernel[(n, triton.cdiv(d, 16))](x, out, d, x.stride(0), CHUNK=16)
    return out
