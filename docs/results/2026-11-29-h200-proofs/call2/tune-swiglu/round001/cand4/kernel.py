"""SwiGLU as two element-wise kernels with an fp32 intermediate.

_silu_gate writes silu(gate) for every element to a temporary fp32 tensor;
_mul_up reads it back, multiplies by up and writes the output. Both are flat
1-D kernels that find each element's row and column by division. Correct
for any shape, but the temporary adds a full write and read of
tokens x hidden fp32 values (more than the input itself in bf16), and there
are two launches where one suffices.
"""
import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _silu_gate(x_ptr, t_ptr, n_elements, hidden, stride_x, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // hidden
    col = offs % hidden
    g = tl.load(x_ptr + row * stride_x + col, mask=mask, other=0.0).to(tl.float32)
    tl.store(t_ptr + offs, g / (1.0 + tl.exp(-g)), mask=mask)


@triton.jit
def _mul_up(t_ptr, x_ptr, y_ptr, n_elements, hidden, stride_x, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    row = offs // hidden
    col = offs % hidden
    s = tl.load(t_ptr + offs, mask=mask, other=0.0)
    u = tl.load(x_ptr + row * stride_x + hidden + col, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (s * u).to(y_ptr.dtype.element_ty), mask=mask)


def kernel_function(x: torch.Tensor) -> torch.Tensor:
    assert x.shape[-1] % 2 == 0, "the last dimension holds gate and up halves"
    hidden = x.shape[-1] // 2
    x2 = x.reshape(-1, 2 * hidden).contiguous()
    n_rows = x2.shape[0]
    t = torch.empty((n_rows, hidden), device=x.device, dtype=torch.float32)
    y = torch.empty((n_rows, hidden), device=x.device, dtype=x.dtype)
    n = n_rows * hidden
    grid = (triton.cdiv(n, BLOCK),)
    _silu_gate[grid](x2, t, n, hidden, x2.stride(0), BLOCK=BLOCK, num_warps=4)
    _mul_up[grid](t, x2, y, n, hidden, x2.stride(0), BLOCK=BLOCK, num_warps=4)
    return y.reshape(*x.shape[:-1], hidden)
