"""Correct: ModelNew with nn.Linear weights, the product in a Triton kernel."""
import torch.nn as nn
import torch
import triton
import triton.language as tl


@triton.jit
def _linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, K, N, stride_xm, stride_wn, stride_om,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_mask = cols < N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        k_mask = ks < K
        xv = tl.load(x_ptr + row * stride_xm + ks, mask=k_mask, other=0.0).to(tl.float32)
        wv = tl.load(w_ptr + cols[None, :] * stride_wn + ks[:, None],
                     mask=k_mask[:, None] & n_mask[None, :], other=0.0).to(tl.float32)
        acc += tl.sum(xv[:, None] * wv, axis=0)
    acc += tl.load(b_ptr + cols, mask=n_mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_om + cols, acc, mask=n_mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight.contiguous()
        b = self.linear.bias.contiguous()
        m, k = x.shape
        n = w.shape[0]
        out = torch.empty((m, n), device=x.device, dtype=x.dtype)
        grid = (m, triton.cdiv(n, 32))
        _linear_kernel[grid](x, w, b, out, k, n, x.stride(0), w.stride(0), out.stride(0),
                             BLOCK_N=32, BLOCK_K=16)
        return out
