"""Correct: ModelNew with nn.Parameters, per-channel affine in Triton."""
import torch.nn as nn
import torch
import triton
import triton.language as tl


@triton.jit
def _affine_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, C, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = offs % C
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + c, mask=mask, other=0.0)
    b = tl.load(b_ptr + c, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(channels))
        self.bias = nn.Parameter(torch.empty(channels))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _affine_kernel[(triton.cdiv(n, 1024),)](x, self.weight, self.bias, out, n, x.shape[-1], BLOCK=1024)
        return out
