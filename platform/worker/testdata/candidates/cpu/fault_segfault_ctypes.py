"""Fault: dereferences NULL through ctypes (rejected statically: ctypes is banned)."""
import ctypes

import torch


def kernel_function(x, y):
    ctypes.string_at(0)
    return x
