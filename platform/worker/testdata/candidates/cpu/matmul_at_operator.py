"""Cheat: the @ operator hidden in a helper two calls deep."""
import torch


def _inner(a, b):
    return a @ b


def _outer(a, b):
    return _inner(a, b)


def kernel_function(a, b):
    return _outer(a, b)
