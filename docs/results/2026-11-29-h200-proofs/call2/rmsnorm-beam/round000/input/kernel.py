"""RMSNorm over dim 1 of a contiguous [B, C, H, W] tensor, in two passes.

Each program owns BLOCK consecutive spatial positions of one batch entry.
Pass 1 walks the C channels and accumulates the sum of squares per position;
pass 2 walks the channels again, scales and stores. x is read twice, so this
kernel moves about 1.5x the bytes of a single-pass one.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_two_pass(x_ptr, y_ptr, C, HW, eps,
                      BLOCK: tl.constexpr):
    pid_hw = tl.program_id(0)
    b = tl.program_id(1)
    offs = pid_hw * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    base = b.to(tl.int64) * C * HW
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c in range(0, C):
        v = tl.load(x_ptr + base + c * HW + offs, mask=mask, other=0.0).to(tl.float32)
        acc += v * v
    rstd = 1.0 / tl.sqrt(acc / C + eps)
    for c in range(0, C):
        v = tl.load(x_ptr + base + c * HW + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + c * HW + offs, (v * rstd).to(y_ptr.dtype.element_ty), mask=mask)


def kernel_function(x: torch.Tensor, num_features: int, eps: float = 1e-5) -> torch.Tensor:
    assert x.dim() == 4 and x.shape[1] == num_features, "expected [B, C, H, W] with C == num_features"
    x = x.contiguous()
    y = torch.empty_like(x)
    B, C, H, W = x.shape
    HW = H * W
    BLOCK = 1024
    grid = (triton.cdiv(HW, BLOCK), B)
    _rmsnorm_two_pass[grid](x, y, C, HW, eps, BLOCK=BLOCK, num_warps=4)
    return y
