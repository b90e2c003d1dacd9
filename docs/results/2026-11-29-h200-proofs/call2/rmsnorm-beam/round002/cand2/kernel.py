"""RMSNorm over dim 1 of a contiguous [B, C, H, W] tensor, in one pass.

Each program owns BLOCK consecutive spatial positions of one batch entry and
holds all C channels of them in registers ([C_BLOCK, BLOCK] tile): x is read
once and y written once, the memory floor of the problem.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_one_pass(x_ptr, y_ptr, C, HW, eps,
                      C_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    pid_hw = tl.program_id(0)
    b = tl.program_id(1)
    offs = pid_hw * BLOCK + tl.arange(0, BLOCK)
    chans = tl.arange(0, C_BLOCK)
    mask = (chans[:, None] < C) & (offs[None, :] < HW)
    base = b.to(tl.int64) * C * HW
    idx = base + chans[:, None].to(tl.int64) * HW + offs[None, :]
    v = tl.load(x_ptr + idx, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / C + eps)
    tl.store(y_ptr + idx, (v * rstd[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


def kernel_function(x: torch.Tensor, num_features: int, eps: float = 1e-5) -> torch.Tensor:
    assert x.dim() == 4 and x.shape[1] == num_features, "expected [B, C, H, W] with C == num_features"
    x = x.contiguous()
    y = torch.empty_like(x)
    B, C, H, W = x.shape
    HW = H * W
    C_BLOCK = triton.next_power_of_2(C)
    BLOCK = max(16, min(64, 32768 // C_BLOCK))
    grid = (triton.cdiv(HW, BLOCK), B)
    _rmsnorm_one_pass[grid](x, y, C, HW, eps, C_BLOCK=C_BLOCK, BLOCK=BLOCK, num_warps=4)
    return y
