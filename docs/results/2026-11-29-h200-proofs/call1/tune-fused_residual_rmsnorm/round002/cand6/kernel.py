"""Residual add + RMSNorm as three kernels.

_add writes h = x + residual; _row_rstd reads h back, one program per row,
256 columns at a time, and stores 1/rms per row; _scale reads h a second
time and writes y = h * rstd[row] * weight[col] from a flat element-wise
grid (row and column found by division). Correct for any shape, but h makes
two extra trips through HBM (1.5x the bytes of a fused kernel) and there
are three launches.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(x_ptr, r_ptr, h_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0)
    tl.store(h_ptr + offs, x + r, mask=mask)


@triton.jit
def _row_rstd(h_ptr, rstd_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    h_row = h_ptr + row * n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(h_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += v * v
    ms = tl.sum(acc, axis=0) / n_cols
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(ms + eps))


@triton.jit
def _scale(h_ptr, rstd_ptr, w_ptr, y_ptr, n_elements, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // n_cols
    col = offs % n_cols
    h = tl.load(h_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row, mask=mask, other=0.0)
    w = tl.load(w_ptr + col, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (h * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """Same constructor and parameters as Model (loaded from its state_dict)."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        self.block = 1024

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        assert x.shape == residual.shape and x.shape[-1] == self.weight.shape[0]
        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        r2 = residual.reshape(-1, n_cols).contiguous()
        n_rows = x2.shape[0]
        n = x2.numel()
        h = torch.empty_like(x2)
        y = torch.empty_like(x2)
        rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(n, self.block),)
        _add[grid](x2, r2, h, n, BLOCK=self.block, num_warps=16)
        _row_rstd[(n_rows,)](h, rstd, n_cols, self.eps, BLOCK=256, num_warps=4)
        _scale[grid](h, rstd, self.weight, y, n, n_cols, BLOCK=self.block, num_warps=4)
        return y.reshape(x.shape), h.reshape(x.shape)
