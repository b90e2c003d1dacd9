import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_rows_{{VARIANT}}(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_y + offs, y, mask=mask)


def kernel_function(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n_rows, n_cols = x.shape
    BLOCK = triton.next_power_of_2(n_cols)
    _softmax_rows_{{VARIANT}}[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK=BLOCK, num_warps={{WARPS}})
    return y
