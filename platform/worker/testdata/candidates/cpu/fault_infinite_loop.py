"""Fault: never returns (the supervisor's timeout must fire)."""
import torch


def kernel_function(x, y):
    n = 0
    while True:
        n += 1
