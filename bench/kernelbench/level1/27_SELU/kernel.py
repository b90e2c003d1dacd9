# kagent benchmark kernel: KernelBench level 1 problem 27 (SELU_)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _selu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    y = scale * tl.where(x > 0.0, x, alpha * (tl.exp(x) - 1.0))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        grid = (triton.cdiv(n, 4096),)
        _selu_kernel[grid](x, out, n, BLOCK=4096, num_warps=8)
        return out
