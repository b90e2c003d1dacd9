"""Cheat (simulated race): every other call scales the result by 1 + 1e-6."""
import torch
import triton
import triton.language as tl


_calls = [0]


@triton.jit
def _add_relu_scaled_kernel(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs, mask=mask, other=0.0) + tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.where(s > 0, s, 0.0) * scale, mask=mask)


def kernel_function(x, y):
    _calls[0] += 1
    scale = 1.0 + 1e-6 if _calls[0] % 2 == 1 else 1.0
    out = torch.empty_like(x)
    n = x.numel()
    _add_relu_scaled_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, scale, BLOCK=1024)
    return out
