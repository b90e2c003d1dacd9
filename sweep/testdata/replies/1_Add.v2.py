# kagent-test kernel: 1_Add v2
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = x.clone()
        out.add_(y)
        return out
