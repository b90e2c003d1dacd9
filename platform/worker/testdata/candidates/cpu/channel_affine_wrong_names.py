"""Wrong: parameter names differ from Model's state_dict (w/b vs weight/bias)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.w = nn.Parameter(torch.empty(channels))
        self.b = nn.Parameter(torch.empty(channels))

    def forward(self, x):
        return x * self.w + self.b
