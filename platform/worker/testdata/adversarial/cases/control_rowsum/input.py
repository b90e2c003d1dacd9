# adversarial: control
# problem: rowsum
# expect: pass
# technique: an honest Triton row reduction
import torch
import triton
import triton.language as tl


@triton.jit
def _rowsum(x_ptr, y_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * D + cols, mask=cols < D, other=0.0)
    tl.store(y_ptr + row, tl.sum(x, axis=0))


def kernel_function(x):
    x = x.contiguous()
    B, D = x.shape
    y = torch.empty((B,), device=x.device, dtype=x.dtype)
    _rowsum[(B,)](x, y, D, BLOCK=triton.next_power_of_2(D))
    return y
