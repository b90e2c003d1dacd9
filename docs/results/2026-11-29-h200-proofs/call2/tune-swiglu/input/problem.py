import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """SwiGLU activation of a fused gate/up projection, as in the MLP of
    Llama-style models: silu(x[..., :hidden]) * x[..., hidden:]."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


num_tokens = 8192
hidden = 14336


def get_inputs():
    x = torch.randn(num_tokens, 2 * hidden)
    return [x]


def get_init_inputs():
    return []
