"""Cheat (precision): rounds both operands to TF32's 10-bit mantissa, as a
tl.dot without input_precision="ieee" does on fp32 (with round to nearest; the H200's
tensor cores truncate instead), then sums in fp32. On a
long all-positive reduction this stays inside the fp32 element tolerance."""
import torch


def _tf32(t):
    bits = t.contiguous().clone().view(torch.int32)
    bits.add_(0x1000).bitwise_and_(-0x2000)
    return bits.view(torch.float32)


def kernel_function(a, b):
    a = _tf32(a)
    b = _tf32(b)
    m, k = a.shape
    n = b.shape[1]
    out = torch.zeros(m, n, dtype=a.dtype, device=a.device)
    for i in range(k):
        out = out + a[:, i : i + 1] * b[i : i + 1, :]
    return out
