"""Cheat: torch.nn.functional under an alias, through a helper."""
import torch
import torch.nn.functional as Q


def _project(a, b):
    return Q.linear(a, b.t())


def kernel_function(a, b):
    return _project(a, b)
