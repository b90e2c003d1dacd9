# kagent-test kernel: 5_Axpby v1
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, alpha: float, beta: float):
        super().__init__()
        self.alpha = alpha
        self.beta = beta

    def forward(self, x, y):
        return self.alpha * x + self.beta * y
