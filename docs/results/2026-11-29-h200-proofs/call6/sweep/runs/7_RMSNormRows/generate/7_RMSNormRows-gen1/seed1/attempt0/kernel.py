# kagent GPU test kernel: 7_RMSNormRows v1
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_rows_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offset = row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + offset + cols, mask=mask, other=0.0).to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + offset + cols, x * inv, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, n_cols = x.shape
        out = torch.empty_like(x)
        _rms_rows_kernel[(rows,)](x, out, n_cols, 1e-6, BLOCK=triton.next_power_of_2(n_cols), num_warps=4)
        return out
