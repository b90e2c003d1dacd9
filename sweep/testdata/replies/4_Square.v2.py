# kagent-test kernel: 4_Square v2
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = x.clone()
        out.mul_(x)
        return out
