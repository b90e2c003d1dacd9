"""Fault: imports a module that does not exist."""
import torch
import torch.kagent_no_such_module_xyz


def kernel_function(x, y):
    return x
