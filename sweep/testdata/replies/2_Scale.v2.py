# kagent-test kernel: 2_Scale v2
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        out = x.clone()
        out.mul_(self.scale)
        return out
