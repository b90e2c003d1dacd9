"""Correct results, but every call keeps 4 MiB of device memory it never frees."""
import torch
import triton
import triton.language as tl


@triton.jit
def _add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    s = x + y
    tl.store(out_ptr + offs, tl.where(s > 0, s, 0.0), mask=mask)


_kept = []


def kernel_function(x, y):
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    _add_relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    _kept.append(torch.empty(4 << 20, dtype=torch.uint8, device=x.device))
    return out
