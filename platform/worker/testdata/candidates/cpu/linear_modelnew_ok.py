"""Correct: ModelNew with weights (an nn.Linear used only as a parameter holder)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w = self.linear.weight
        out = self.linear.bias.unsqueeze(0).expand(x.shape[0], -1).clone()
        for k in range(x.shape[1]):
            out = out + x[:, k : k + 1] * w[:, k].unsqueeze(0)
        return out
