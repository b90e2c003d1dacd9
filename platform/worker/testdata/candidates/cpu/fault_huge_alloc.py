"""Fault: asks for an impossible amount of memory (2**60 bytes)."""
import torch


def kernel_function(x, y):
    buf = torch.empty(1 << 60, dtype=torch.uint8, device=x.device)
    return buf[: x.numel()].view(x.shape)
