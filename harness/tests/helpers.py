"""Shared helpers for in-process tests: temporary problem and candidate files."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import textwrap
import unittest
from typing import Any, Dict, List, Optional

import torch

from kagent_harness.device import Device
from kagent_harness.guard import Guard
from kagent_harness.loading import Problem, load_problem

SEEDS = [3, 4, 123456789]

ADD_RELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)

N = 16
D = 8

def get_inputs():
    return [torch.randn(N, D), torch.randn(N, D)]

def get_init_inputs():
    return []
"""


# torch 2.x (what users and CI run) has torch.compile and FlopCounterMode:
# there the tests require them instead of accepting their absence.
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


class TempFilesCase(unittest.TestCase):
    """A test case with a temporary directory, a CPU device and a guard."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="kagent-test-")
        self.device = Device("cpu")
        self.guard = Guard()
        self._n = 0

    def tearDown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, source: str, name: Optional[str] = None) -> str:
        self._n += 1
        path = os.path.join(self.dir, name or f"file{self._n}.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(source))
        return path

    def problem(self, source: str = ADD_RELU, seeds: Optional[List[int]] = None, flop_counter: Any = None,
                **options: Any) -> Problem:
        """Load a problem from source; options are load_problem request fields
        (flop_counter stands in for torch.utils.flop_counter)."""
        path = self.write(source, f"problem{self._n + 1}.py")
        req: Dict[str, Any] = {"problem_path": path, "seeds": seeds or SEEDS}
        req.update(options)
        return load_problem(req, self.device, f"t{self._n}", flop_counter=flop_counter)


def load_script(name: str) -> Any:
    """The repository's scripts/NAME.py, imported as a module."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
