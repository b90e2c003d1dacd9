"""Cheat: memoizes with functools.lru_cache."""
import functools

import torch


@functools.lru_cache(maxsize=None)
def _cached(x, y):
    s = x + y
    return s * (s > 0).to(s.dtype)


def kernel_function(x, y):
    return _cached(x, y)
