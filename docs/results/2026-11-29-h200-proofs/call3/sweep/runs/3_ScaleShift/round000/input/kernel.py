# kagent GPU test kernel: 3_ScaleShift v1
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scaleshift_kernel(x_ptr, out_ptr, n, scale, shift, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = x * scale + shift
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale, shift):
        super().__init__()
        self.scale = float(scale)
        self.shift = float(shift)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        grid = (triton.cdiv(n, 1024),)
        _scaleshift_kernel[grid](x, out, n, self.scale, self.shift, BLOCK=1024, num_warps=4)
        return out
