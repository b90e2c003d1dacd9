import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x W^T + b with an nn.Linear (weights come from the state_dict)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)


BATCH = 8
IN_FEATURES = 16
OUT_FEATURES = 32


def get_inputs():
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
