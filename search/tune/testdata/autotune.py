import torch
import triton
import triton.language as tl

_CONFIGS = [
    triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_SIZE_M": 2 * 32, "BLOCK_SIZE_N": 32, "EVEN": True}, num_warps=2),
]


@triton.autotune(configs=_CONFIGS, key=["M", "N"])
@triton.jit
def _mv(a_ptr, x_ptr, y_ptr, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr, EVEN: tl.constexpr = False):
    pid = tl.program_id(0)
    rows = pid * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    acc = tl.zeros([BLOCK_SIZE_M], dtype=tl.float32)
    for k in range(0, N, BLOCK_SIZE_N):
        cols = k + tl.arange(0, BLOCK_SIZE_N)
        a = tl.load(a_ptr + rows[:, None] * N + cols[None, :],
                    mask=(rows[:, None] < M) & (cols[None, :] < N), other=0.0)
        x = tl.load(x_ptr + cols, mask=cols < N, other=0.0)
        acc += tl.sum(a * x[None, :], axis=1)
    tl.store(y_ptr + rows, acc, mask=rows < M)


class ModelNew(torch.nn.Module):
    tile = 999  # not fed to any launch

    def __init__(self):
        super().__init__()
        self.warps = 8

    def forward(self, a, x):
        M, N = a.shape
        y = torch.empty(M, device=a.device, dtype=torch.float32)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]),)
        _mv[grid](a, x, y, M, N)
        return y
