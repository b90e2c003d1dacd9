# kagent-test kernel: 5_Axpby v2
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x, y):
        out = x * self.alpha
        out.add_(y, alpha=self.beta)
        return out
