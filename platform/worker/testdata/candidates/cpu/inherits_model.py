"""Cheat: inherits the reference Model and adds nothing."""
import torch
import torch.nn as nn


class ModelNew(Model):  # noqa: F821 - the reference class, hoped to be in scope
    pass
