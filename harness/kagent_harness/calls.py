"""One guarded call of a candidate (or a baseline): exceptions are classified,
asynchronous device errors are caught by a synchronize inside the call, and the
tamper guard is checked right after."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, List, Optional

import torch

from .device import Device
from .failures import CUDA_ERROR, EXCEPTION, TAMPER, CheckFailure, classify, describe
from .guard import Guard
from .launches import LaunchCounter
from .poison import poison_free_memory, poisoned_allocations


def invoke(
    fn: Callable[..., Any],
    inputs: List[Any],
    device: Device,
    guard: Optional[Guard],
    poison: bool = False,
    like: Any = None,
    counter: Optional[LaunchCounter] = None,
    what: str = "the call",
) -> Any:
    """Call ``fn(*inputs)`` under no_grad and wait for the device.

    Raises CheckFailure named ``exception``, ``oom``, ``cuda_error`` (fatal) or
    ``tamper`` (fatal).
    """
    from .remote import RemoteCallable

    if isinstance(fn, RemoteCallable):
        # The candidate runs in its runner, which poisons, counts launches
        # and waits for the device there.
        out = fn.invoke(inputs, poison, like, counter, what)
        if guard is not None:
            changed = guard.check()
            if changed:
                raise CheckFailure(TAMPER, f"the worker changed during a call in another process: {changed}", True)
        return out
    try:
        if poison:
            poison_free_memory(device, like)
        with torch.no_grad():
            with poisoned_allocations() if poison else contextlib.nullcontext():
                with counter if counter is not None else contextlib.nullcontext():
                    out = fn(*inputs)
                    device.synchronize()
    except CheckFailure:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit, MemoryError, CUDA errors ...
        kind, fatal = classify(exc)
        if device.is_gpu and kind == EXCEPTION:
            broken = device.health_check()
            if broken:
                kind, fatal = CUDA_ERROR, True
        if kind != EXCEPTION and not fatal:
            device.empty_cache()
        raise CheckFailure(kind, f"{what} raised {describe(exc)}", fatal) from None
    if guard is not None:
        changed = guard.check()
        if changed:
            raise CheckFailure(TAMPER, f"the candidate tampered with the harness: {changed}", True)
    return out
