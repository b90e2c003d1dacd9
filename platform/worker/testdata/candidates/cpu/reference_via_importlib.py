"""Cheat: reaches the reference through importlib."""
import importlib


def kernel_function(a, b):
    ref = importlib.import_module("problem")
    return ref.Model()(a, b)
