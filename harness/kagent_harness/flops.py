"""Counting the reference's floating-point operations, for the roofline.

One forward of the reference ``Model`` on the first draw of the main shape set,
on the device, under ``no_grad`` and ``torch.utils.flop_counter.FlopCounterMode``
(torch >= 2.1; ``display=False``). FlopCounterMode counts matrix products,
convolutions and attention (2 FLOPs per multiply-add), not elementwise work
or reductions, so a problem without them counts 0 (memory-bound). On older
torch, or when counting raises, the count is None and the note says why.

The counter module can be injected (``counter=``), so the plumbing is testable
where torch has no FlopCounterMode.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, List, Optional

import torch

from .device import Device, tensors_in
from .failures import CUDA_ERROR, OOM, classify, describe

COUNTER_MODULE = "torch.utils.flop_counter"


@dataclass
class FlopCount:
    flops: Optional[int]
    note: str


def counter_module() -> Optional[ModuleType]:
    """torch.utils.flop_counter when this torch has it (>= 2.1)."""
    try:
        return importlib.import_module(COUNTER_MODULE)
    except Exception:  # noqa: BLE001 - absent or broken: no count
        return None


def dtype_policy(inputs: List[Any], dtype_name: str, tf32: str) -> str:
    """The reference's dtype, and its TF32 policy when TF32 is allowed."""
    dtype = dtype_name
    if not dtype:
        floats = [t for t in tensors_in(inputs) if t.is_floating_point()]
        dtype = str(floats[0].dtype).replace("torch.", "") if floats else "native"
    text = f"reference dtype {dtype}"
    if tf32 == "allow":
        text += (
            "; TF32 allowed: the reference's fp32 matmuls and convolutions may run on TF32 tensor cores "
            "(the compute roof is the TF32 rate)"
        )
    return text


def count_flops(
    model: Callable[..., Any],
    inputs: List[Any],
    device: Device,
    policy: str,
    counter: Optional[ModuleType] = None,
) -> FlopCount:
    """FLOPs of ``model(*inputs)`` (one forward). ``policy`` (see dtype_policy)
    ends the note. Raises only for a CUDA error (the process is poisoned)."""
    mod = counter if counter is not None else counter_module()
    mode_cls = getattr(mod, "FlopCounterMode", None) if mod is not None else None
    if mode_cls is None:
        return FlopCount(
            None,
            f"not counted: torch {torch.__version__} has no {COUNTER_MODULE}.FlopCounterMode (torch >= 2.1); {policy}",
        )
    try:
        mode = mode_cls(display=False)
        with torch.no_grad():
            with mode:
                model(*inputs)
            device.synchronize()
        total = int(mode.get_total_flops())
    except BaseException as exc:  # noqa: BLE001 - the reference under a dispatch mode: anything can happen
        kind, fatal = classify(exc)
        if kind == CUDA_ERROR or fatal:
            raise
        if kind == OOM:
            device.empty_cache()
        return FlopCount(None, f"not counted: FlopCounterMode raised {describe(exc)}; {policy}")
    return FlopCount(
        total,
        f"FlopCounterMode, one forward of the reference on the main shape (matmul, convolution and attention "
        f"FLOPs, 2 per multiply-add; elementwise work and reductions not counted); {policy}",
    )
