"""LayerNorm as two kernels: row statistics, then an element-wise pass.

_row_stats walks each row twice (the mean, then the variance about it),
256 columns at a time with two warps, and stores mean and 1/std per row.
_normalize is a flat element-wise kernel that finds each element's row and
column by division and gathers mean, rstd, weight and bias per element.
Correct for any shape, but x is read three times and there is an extra
launch and a round trip of the statistics through memory.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

STATS_BLOCK = 256
NORM_BLOCK = 1024


@triton.jit
def _row_stats(x_ptr, mean_ptr, rstd_ptr, n_cols, stride_x, eps,
               BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        v = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, v - mean, 0.0)
        acc2 += d * d
    var = tl.sum(acc2, axis=0) / n_cols
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(var + eps))


@triton.jit
def _normalize(x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, y_ptr, n_elements, n_cols,
               BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // n_cols
    col = offs % n_cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row, mask=mask, other=0.0)
    rstd = tl.load(rstd_ptr + row, mask=mask, other=0.0)
    w = tl.load(w_ptr + col, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + col, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean) * rstd * w + b
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    """Same constructor and parameters as Model (loaded from its state_dict)."""

    def __init__(self, features: int, eps: float = 1e-5):
        super().__init__()
        self.features = features
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.shape[-1] == self.features, "the last dimension must be features"
        x2 = x.reshape(-1, self.features).contiguous()
        n_rows, n_cols = x2.shape
        mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        y = torch.empty_like(x2)
        _row_stats[(n_rows,)](x2, mean, rstd, n_cols, x2.stride(0), self.eps,
                              BLOCK=STATS_BLOCK, num_warps=2)
        n = x2.numel()
        _normalize[(triton.cdiv(n, NORM_BLOCK),)](x2, self.weight, self.bias, mean, rstd, y, n, n_cols,
                                                  BLOCK=NORM_BLOCK, num_warps=4)
        return y.reshape(x.shape)
