# kagent-test kernel: 6_Swish v1
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        # wrong on purpose: the sigmoid is missing
        return x * x
