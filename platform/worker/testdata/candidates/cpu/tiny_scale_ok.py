"""Correct: tanh(x) * 1e-6."""
import torch


def kernel_function(x):
    return torch.tanh(x) * 1e-6
