# kagent benchmark kernel: KernelBench level 1 problem 23 (Softmax)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * n_cols
    out_row = out_ptr + row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    # Pass 1: online max and sum of exp, one running pair per lane.
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_ref) + tl.exp(x - m_ref)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    inv_sum = 1.0 / row_sum
    # Pass 2: write the result.
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        y = tl.exp(x - row_max) * inv_sum
        tl.store(out_row + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        rows, n_cols = x.shape
        _softmax_kernel[(rows,)](x, out, n_cols, BLOCK=4096, num_warps=8)
        return out
