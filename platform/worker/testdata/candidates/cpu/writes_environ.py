"""Cheat: changes the environment of the worker."""
import os

import torch

os.environ["TRITON_INTERPRET"] = "0"


def kernel_function(x, y):
    s = x + y
    return s * (s > 0).to(s.dtype)
