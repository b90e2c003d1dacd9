import torch
import triton
import triton.language as tl

ROWS_BLOCK = 64


@triton.jit
def _row_sum(x_ptr, s_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(s_ptr + row, tl.sum(x, axis=0))


@triton.jit
def _scale(x_ptr, s_ptr, y_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=m)
        s = tl.load(s_ptr + rows, mask=rows < n_rows)
        tl.store(y_ptr + rows[:, None] * n_cols + cols[None, :], x / s[:, None], mask=m)


@triton.jit
def _exact(x_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n, other=float("-inf"))
    tl.store(x_ptr, tl.max(x, axis=0))


def kernel_function(x):
    n_rows, n_cols = x.shape
    s = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    y = torch.empty_like(x)
    # Whole-row block, computed: not a knob.
    _row_sum[(n_rows,)](x, s, n_cols, BLOCK_N=triton.next_power_of_2(n_cols), num_warps=8)
    BM, BN = 32, 128
    _scale[(triton.cdiv(n_rows, BM),)](x, s, y, n_rows, n_cols, BM, BLOCK_N=BN, num_warps=4, num_stages=2)
    _exact[(1,)](s, n_rows, BLOCK=4096)
    return y
