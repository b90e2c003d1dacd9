# kagent benchmark kernel: KernelBench level 1 problem 20 (LeakyReLU)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_relu_kernel(x_ptr, out_ptr, n, negative_slope, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.where(x > 0.0, x, x * negative_slope)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        grid = (triton.cdiv(n, 4096),)
        _leaky_relu_kernel[grid](x, out, n, self.negative_slope, BLOCK=4096, num_warps=8)
        return out
