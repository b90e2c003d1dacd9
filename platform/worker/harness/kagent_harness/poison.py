"""Poisoning memory so that output a candidate never writes reads as NaN.

Two layers, both active during every verification call:

- ``poison_free_memory``: before the call, the caching allocator's free blocks
  are allocated, filled with NaN and freed again (CUDA), so an allocation the
  candidate makes by any route lands on NaN rather than on a stale result.
  On CPU, freed chunks of the outputs' sizes are NaN-filled and released.
- ``poisoned_allocations``: during the call, ``torch.empty``, ``empty_like``,
  ``empty_strided``, ``Tensor.new_empty`` and ``Tensor.new_empty_strided``
  return NaN-filled floating tensors (integers get their dtype's max, bools
  True). The originals are restored afterwards; if the candidate replaced one
  of the wrappers meanwhile, that is reported as tampering.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, List, Tuple

import torch

from .device import Device, tensors_in
from .failures import TAMPER, CheckFailure

_ORIGINALS: Dict[Tuple[Any, str], Callable[..., Any]] = {
    (torch, "empty"): torch.empty,
    (torch, "empty_like"): torch.empty_like,
    (torch, "empty_strided"): torch.empty_strided,
    (torch.Tensor, "new_empty"): torch.Tensor.new_empty,
    (torch.Tensor, "new_empty_strided"): torch.Tensor.new_empty_strided,
}

_NO_GRAD = torch.no_grad
_EMPTY = torch.empty


def fill_poison(t: torch.Tensor) -> torch.Tensor:
    """Fill a freshly allocated tensor with the poison value of its dtype."""
    if t.device.type == "meta" or t.numel() == 0:
        return t
    with _NO_GRAD():
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.dtype == torch.bool:
            t.fill_(True)
        else:
            try:
                t.fill_(torch.iinfo(t.dtype).max)
            except (TypeError, RuntimeError):
                pass
    return t


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    def poisoned(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            fill_poison(out)
        return out

    poisoned.__name__ = getattr(original, "__name__", "poisoned")
    poisoned.__doc__ = getattr(original, "__doc__", None)
    return poisoned


@contextlib.contextmanager
def poisoned_allocations() -> Iterator[None]:
    wrappers: List[Tuple[Any, str, Callable[..., Any]]] = []
    for (owner, name), original in _ORIGINALS.items():
        wrapper = _wrap(original)
        setattr(owner, name, wrapper)
        wrappers.append((owner, name, wrapper))
    replaced: List[str] = []
    try:
        yield
    finally:
        for owner, name, wrapper in wrappers:
            if getattr(owner, name, None) is not wrapper:
                replaced.append(f"{getattr(owner, '__name__', owner)}.{name}")
            setattr(owner, name, _ORIGINALS[(owner, name)])
    if replaced:
        raise CheckFailure(TAMPER, f"the candidate replaced {', '.join(replaced)} during the call")


def poison_free_memory(device: Device, like: Any = None) -> None:
    """NaN-fill memory the candidate's allocations are likely to receive."""
    if device.is_cuda:
        _poison_cuda_cache(device)
    else:
        _poison_cpu(like)


def _poison_cuda_cache(device: Device) -> None:
    held: List[torch.Tensor] = []
    try:
        try:
            segments = torch.cuda.memory_snapshot()
        except (RuntimeError, AttributeError):
            segments = []
        blocks: List[int] = []
        for seg in segments:
            if seg.get("device", 0) != device.torch_device.index and seg.get("device") is not None:
                continue
            for block in seg.get("blocks", []):
                if block.get("state") == "inactive" and block.get("size", 0) >= 512:
                    blocks.append(int(block["size"]))
        blocks.sort(reverse=True)
        reserved = torch.cuda.memory_reserved(device.torch_device)
        for size in blocks[:4096]:
            try:
                t = _EMPTY(size // 4, dtype=torch.float32, device=device.torch_device)
            except RuntimeError:
                break
            if torch.cuda.memory_reserved(device.torch_device) > reserved:
                # No cached block fitted: this came from a new segment. Stop here.
                held.append(t)
                break
            held.append(t)
        for t in held:
            t.fill_(float("nan"))
        device.synchronize()
    finally:
        del held


def _poison_cpu(like: Any) -> None:
    """Allocate and free NaN-filled buffers of the outputs' sizes so the malloc
    free lists hold NaN where small outputs are likely to be allocated."""
    if like is None:
        return
    held = []
    for t in tensors_in(like):
        n = t.numel() * t.element_size()
        if 0 < n <= (64 << 20):
            buf = _EMPTY((n + 3) // 4, dtype=torch.float32)
            buf.fill_(float("nan"))
            held.append(buf)
    del held
