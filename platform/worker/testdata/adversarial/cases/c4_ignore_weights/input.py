# adversarial: class 4
# technique: ModelNew keeps a private copy of its own initial weights and ignores the loaded ones: they agree because Model and ModelNew are built under the same seed
# problem: linear
# expect: reject
import torch
import torch.nn as nn
import triton
import triton.language as tl

# @@include honest_linear@@


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.frozen = [self.fc.weight.detach().clone(), self.fc.bias.detach().clone()]  # not in state_dict

    def forward(self, x):
        w, b = self.frozen
        return linear(x.contiguous(), w.to(x.device), b.to(x.device))
