"""Cheat: aliases the torch module and uses einsum."""
import torch

T = torch


def kernel_function(a, b):
    return T.einsum("mk,kn->mn", a, b)
