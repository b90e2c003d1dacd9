"""Cheat: patches time.perf_counter through a helper the static check cannot
follow (the module arrives as a parameter); the tamper guard catches it."""
import time

import torch


def _install(mod, name, value):
    mod.__class__  # noqa: B018 - harmless attribute access
    holder = mod
    holder.perf_counter = value


_install(time, "perf_counter", lambda: 0.0)


def kernel_function(x, y):
    s = x + y
    return s * (s > 0).to(s.dtype)
