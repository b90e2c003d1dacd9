"""Correct: a matvec that walks K 16 columns at a time in fp32 (2048 sequential
additions per row). Its error against fp64 is a quarter of TF32's on this
all-positive reduction, yet it computes in fp32 throughout: the precision check
must pass it."""
import torch
import triton
import triton.language as tl


@triton.jit
def _matvec(a_ptr, x_ptr, y_ptr, M, K, stride_am, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        col_mask = cols < K
        a = tl.load(a_ptr + rows[:, None] * stride_am + cols[None, :],
                    mask=row_mask[:, None] & col_mask[None, :], other=0.0)
        x = tl.load(x_ptr + cols, mask=col_mask, other=0.0)
        acc += tl.sum(a * x[None, :], axis=1)
    tl.store(y_ptr + rows, acc, mask=row_mask)


def kernel_function(a, x):
    a = a.contiguous()
    xv = x.reshape(-1).contiguous()
    m, k = a.shape
    y = torch.empty((m, 1), device=a.device, dtype=a.dtype)
    _matvec[(triton.cdiv(m, 16),)](a, xv, y, m, k, a.stride(0), BLOCK_M=16, BLOCK_K=16, num_warps=2)
    return y
