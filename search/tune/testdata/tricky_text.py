"""Docstring mentioning kernel[grid](x, BLOCK=4096, num_warps=8)."""
import triton
import triton.language as tl

# _copy[grid](x, y, n, BLOCK=2048, num_warps=16)  -- a comment, not a launch
NOTE = "launch with BLOCK=512 and num_warps=2"
BLOCK = 256  # feeds the launch below


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def kernel_function(x):
    y = x.new_empty(x.shape)
    n = x.numel()
    msg = f"{_copy[(1,)](x, y, n, BLOCK=64, num_warps=1)} BLOCK=32"
    print(f"block {BLOCK=} warps={4}")
    _copy[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=4)  # BLOCK=128
    return y
