# adversarial: class 5
# technique: kagent.yaml is a symlink to /dev/zero: an unbounded read (kagent runs here under ulimit -v so that the machine survives)
# problem: scale
# expect: reject contain
# setup: symlink kagent.yaml /dev/zero
# limit-as: 4000000
import torch
import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * 2.0 + 1.0, mask=mask)


def kernel_function(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _scale[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
