"""Row softmax in three passes over each row, 256 columns at a time.

One program per row. Pass 1 finds the row's maximum, pass 2 sums
exp(x - max), pass 3 reads the row a third time to write exp(x - max) / sum.
Correct for any shape, but x is read three times and the tiny blocks keep
few bytes in flight per program.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_three_pass(x_ptr, y_ptr, n_cols, stride_x, stride_y,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y

    # Pass 1: the row maximum.
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, v)
    row_max = tl.max(m, axis=0)

    # Pass 2: the sum of exponentials.
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.exp(v - row_max)
    denom = tl.sum(s, axis=0)

    # Pass 3: normalise and store.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        v = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        out = tl.exp(v - row_max) / denom
        tl.store(y_row + cols, out.to(y_ptr.dtype.element_ty), mask=mask)


def kernel_function(x: torch.Tensor) -> torch.Tensor:
    assert x.dim() == 2, "expected a [rows, cols] tensor"
    x = x.contiguous()
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    _softmax_three_pass[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0),
                                   BLOCK=256, num_warps=4, num_stages=2)
    return y
