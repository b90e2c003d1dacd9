"""Tensors shared between the judge and a runner without copies through pipes.

The judge owns every shared buffer (a *slot*): on the CPU a memfd mapped into
both processes, on a GPU a device allocation opened in the runner through CUDA
IPC. The runner only ever receives descriptions of the judge's slots; the judge
never builds anything from what a runner sends except numbers and short
strings it validates (a runner's data is never unpickled by the judge).

A slot is a flat byte buffer; a tensor is a strided view of it (shape, stride,
dtype), so the runner hands the candidate tensors with the very layout the
judge's inputs have.
"""

from __future__ import annotations

import base64
import mmap
import os
import pickle
from typing import Any, Dict, List, Optional, Tuple

import torch

_DTYPES: Dict[str, torch.dtype] = {
    str(dt).replace("torch.", ""): dt
    for dt in (
        torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
        torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128,
    )
}
for _name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        _DTYPES[_name] = getattr(torch, _name)


def dtype_name(dt: torch.dtype) -> str:
    return str(dt).replace("torch.", "")


def dtype_of(name: str) -> torch.dtype:
    dt = _DTYPES.get(str(name))
    if dt is None:
        raise ValueError(f"unsupported dtype {name!r}")
    return dt


def span_bytes(shape: Tuple[int, ...], stride: Tuple[int, ...], itemsize: int) -> int:
    """Bytes a strided view with storage offset 0 reaches."""
    if any(s == 0 for s in shape):
        return 0
    last = sum((n - 1) * st for n, st in zip(shape, stride))
    return (last + 1) * itemsize


class Slot:
    """A judge-owned shared byte buffer."""

    def __init__(self, sid: int, nbytes: int, device: torch.device, pool: Any = None) -> None:
        self.id = sid
        self.nbytes = max(1, nbytes)
        self.device = device
        self.fd: Optional[int] = None
        self._map: Optional[mmap.mmap] = None
        if device.type == "cpu":
            self.fd = os.memfd_create(f"kagent-slot-{sid}", os.MFD_CLOEXEC)
            os.ftruncate(self.fd, self.nbytes)
            self._map = mmap.mmap(self.fd, self.nbytes)
            self.bytes = torch.frombuffer(self._map, dtype=torch.uint8, count=self.nbytes)
        else:
            # CUDA IPC shares the whole allocator segment a block lies in, so
            # a slot comes from a pool of its runner's own (private_pool):
            # the runner can never reach the judge's references or inputs.
            ctx = torch.cuda.use_mem_pool(pool) if pool is not None else _no_pool()
            with ctx:
                self.bytes = torch.empty(self.nbytes, dtype=torch.uint8, device=device)

    def view(self, shape: Tuple[int, ...], stride: Tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return view_of(self.bytes, shape, stride, dtype)

    def describe(self) -> Tuple[Dict[str, Any], List[int]]:
        """What the runner needs to open this slot: a JSON object and the
        descriptors to pass with it."""
        if self.fd is not None:
            return {"id": self.id, "nbytes": self.nbytes, "kind": "memfd"}, [self.fd]
        from torch.multiprocessing.reductions import reduce_tensor

        rebuild, args = reduce_tensor(self.bytes)
        blob = base64.b64encode(pickle.dumps((rebuild, args))).decode("ascii")
        return {"id": self.id, "nbytes": self.nbytes, "kind": "cuda_ipc", "blob": blob}, []

    def close(self) -> None:
        self.bytes = None  # type: ignore[assignment]
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass  # a view is still alive; the mapping goes with it
            self._map = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _no_pool:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def private_pool(device: torch.device) -> Any:
    """A memory pool whose segments hold only one runner's slots (CUDA), or
    None where there is no need (CPU: every slot is its own memfd) or no
    support (then slots share the allocator's segments; PROTOCOL.md says so)."""
    if device.type != "cuda":
        return None
    make = getattr(torch.cuda, "MemPool", None)
    if make is None or not hasattr(torch.cuda, "use_mem_pool"):
        return None
    return make()


def view_of(buf: torch.Tensor, shape: Tuple[int, ...], stride: Tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A strided view of dtype over the uint8 buffer ``buf``."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    need = span_bytes(shape, stride, itemsize)
    if need > buf.numel():
        raise ValueError(f"a view of {need} bytes does not fit a slot of {buf.numel()}")
    usable = (buf.numel() // itemsize) * itemsize
    typed = buf[:usable].view(dtype)
    return typed.as_strided(shape, stride, 0)


def open_slot(desc: Dict[str, Any], fds: List[int], device: torch.device) -> Tuple[torch.Tensor, Any]:
    """Runner side: the slot's bytes and what keeps them mapped."""
    nbytes = int(desc["nbytes"])
    if desc.get("kind") == "memfd":
        if not fds:
            raise ValueError("a memfd slot arrived without its descriptor")
        fd = fds.pop(0)
        mm = mmap.mmap(fd, nbytes)
        os.close(fd)
        return torch.frombuffer(mm, dtype=torch.uint8, count=nbytes), mm
    if desc.get("kind") == "cuda_ipc":
        # The judge's own pickle of torch's CUDA IPC handle (judge to runner only).
        rebuild, args = pickle.loads(base64.b64decode(desc["blob"]))
        t = rebuild(*args)
        return t, None
    raise ValueError(f"unknown slot kind {desc.get('kind')!r}")


def tensor_meta(t: torch.Tensor) -> Dict[str, Any]:
    return {"shape": list(t.shape), "stride": list(t.stride()), "dtype": dtype_name(t.dtype)}
