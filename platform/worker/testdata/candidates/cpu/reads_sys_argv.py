"""Cheat: behaves differently depending on the command line."""
import sys

import torch


def kernel_function(x, y):
    if "bench" in " ".join(sys.argv):
        return x
    s = x + y
    return s * (s > 0).to(s.dtype)
