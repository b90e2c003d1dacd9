"""Cheat: replaces the harness's fingerprint function in its own runner so
that its code fingerprint is one the attacker chose (here, to be taken for
a repeat of another kernel, or to hide one)."""
import kagent_harness.ttir as ttir

import torch

ttir.fingerprint_call = lambda module, source, call: {"method": "ttir", "hash": "f" * 64, "kernels": [], "launches": 1}


def kernel_function(x, y):
    s = x + y
    return s * (s > 0).to(s.dtype)
