"""Broken: forgets the relu."""
import torch


def kernel_function(x, y):
    return (x + y) * 0.5
