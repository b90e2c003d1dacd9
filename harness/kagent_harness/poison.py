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


# The caching allocator serves requests of at most 1 MiB from "small" segments
# and larger ones from "large" segments, so small-segment blocks are refilled in
# pieces of at most 1 MiB (a bigger request would open a new large segment).
_SMALL_REQUEST = 1 << 20
_MAX_PIECES = 8192


def _free_block_sizes(device: Device) -> List[int]:
    try:
        segments = torch.cuda.memory_snapshot()
    except (RuntimeError, AttributeError):
        return []
    sizes: List[int] = []
    for seg in segments:
        if seg.get("device", device.torch_device.index) != device.torch_device.index:
            continue
        small = seg.get("segment_type") == "small"
        for block in seg.get("blocks", []):
            if block.get("state") != "inactive":
                continue
            size = int(block.get("size", 0))
            while size >= 512:
                piece = min(size, _SMALL_REQUEST) if small else size
                sizes.append(piece)
                size -= piece
    sizes.sort(reverse=True)
    return sizes[:_MAX_PIECES]


def _poison_cuda_cache(device: Device) -> None:
    """Allocate every free cached block (best fit takes the block of the exact
    size), fill all of them with NaN, free them again."""
    held: List[torch.Tensor] = []
    try:
        for size in _free_block_sizes(device):
            try:
                held.append(_EMPTY(size // 4, dtype=torch.float32, device=device.torch_device))
            except RuntimeError:
                continue
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
