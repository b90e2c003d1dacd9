"""Wrong for 1_Add: subtracts instead of adding."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return x - y
