"""Tensors shared between the judge and a runner without copies through pipes.

The judge owns every shared buffer (a *slot*): a memfd in host memory mapped
into both processes. On the CPU the candidate reads its inputs from the slots
themselves. On a GPU the runner keeps a device copy (a *mirror*) of each input
slot, refreshed when the judge reports the slot written; CUDA IPC is not used:
it does not work across the sandbox's PID namespace, and it would expose whole
allocator segments of the judge. The judge never builds anything from what a
runner sends except numbers and short strings it validates (a runner's data is
never unpickled by the judge).

A slot is a flat byte buffer; a tensor is a strided view of it (shape, stride,
dtype), so the runner hands the candidate tensors with the very layout the
judge's inputs have.
"""

from __future__ import annotations

import mmap
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

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


# Slots of at least this size are page-locked for the GPU (cudaHostRegister)
# in each process that maps them: copies between the device and a locked
# buffer run at the bus's speed (pageable copies are several times slower,
# which dominated verification and timing of problems with GB-sized tensors).
PIN_MIN_BYTES = 16 << 20


def pin(t: torch.Tensor) -> bool:
    """Page-lock a host buffer for the GPU; False where that is not possible
    (no CUDA, a small buffer, the driver refused): copies still work, slower."""
    if t.numel() < PIN_MIN_BYTES or not torch.cuda.is_available() or getattr(torch.version, "hip", None):
        return False
    try:
        err = torch.cuda.cudart().cudaHostRegister(t.data_ptr(), t.numel(), 0)
    except (RuntimeError, AttributeError, TypeError):
        return False
    return int(getattr(err, "value", err)) == 0


def unpin(t: torch.Tensor) -> None:
    try:
        torch.cuda.cudart().cudaHostUnregister(t.data_ptr())
    except (RuntimeError, AttributeError, TypeError):
        pass


class Slot:
    """A judge-owned shared byte buffer."""

    def __init__(self, sid: int, nbytes: int, lock: bool = False) -> None:
        self.id = sid
        self.nbytes = max(1, nbytes)
        self.fd: Optional[int] = os.memfd_create(f"kagent-slot-{sid}", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.nbytes)
        self._map: Optional[mmap.mmap] = mmap.mmap(self.fd, self.nbytes)
        self.bytes = torch.frombuffer(self._map, dtype=torch.uint8, count=self.nbytes)
        self.pinned = lock and pin(self.bytes)

    def view(self, shape: Tuple[int, ...], stride: Tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return view_of(self.bytes, shape, stride, dtype)

    def describe(self) -> Tuple[Dict[str, Any], List[int]]:
        """What the runner needs to open this slot: a JSON object and the
        descriptor to pass with it."""
        assert self.fd is not None
        return {"id": self.id, "nbytes": self.nbytes, "kind": "memfd"}, [self.fd]

    def close(self) -> None:
        if self.pinned and self.bytes is not None:
            unpin(self.bytes)
            self.pinned = False
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


class DeviceSlot:
    """A judge-owned shared buffer in device memory (devbuf.py): the runner
    maps the same allocation, so tensors cross device to device."""

    def __init__(self, sid: int, nbytes: int) -> None:
        from . import devbuf

        self.id = sid
        self.nbytes = max(1, nbytes)
        self.pinned = False
        self._mapping, fd = devbuf.allocate(self.nbytes)
        self.fd: Optional[int] = fd
        self.bytes = self._mapping.tensor(self.nbytes)

    def view(self, shape: Tuple[int, ...], stride: Tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        return view_of(self.bytes, shape, stride, dtype)

    def describe(self) -> Tuple[Dict[str, Any], List[int]]:
        assert self.fd is not None
        return {"id": self.id, "nbytes": self.nbytes, "kind": "cudavmm", "size": self._mapping.size}, [self.fd]

    def close(self) -> None:
        # The mapping goes with the last tensor over it (never under a view
        # still in use).
        self.bytes = None  # type: ignore[assignment]
        self._mapping = None  # type: ignore[assignment]
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def new_slot(sid: int, nbytes: int, cuda: bool) -> Any:
    """A device slot where device buffers are on (devbuf.enabled) and work,
    else a host slot (page-locked on CUDA). Where the device is out of
    memory, the room hook (set by the worker: it closes kept runners) runs
    and the allocation is tried once more; a slot that still cannot be made
    is a host slot. Any other failure turns device slots off for this
    process."""
    from . import devbuf

    if cuda and devbuf.enabled() and not _device_slots_failed:
        for attempt in range(2):
            try:
                return DeviceSlot(sid, nbytes)
            except devbuf.DriverError as exc:
                if exc.out_of_memory:
                    if attempt == 0 and _room_hook:
                        _room_hook[0](nbytes)
                        continue
                    break
                _device_slots_off(exc)
                break
            except (OSError, RuntimeError) as exc:
                _device_slots_off(exc)
                break
    return Slot(sid, nbytes, lock=cuda)


def device_slot(sid: int, nbytes: int) -> Optional["DeviceSlot"]:
    """A device slot where device buffers are on and one can be made now,
    else None: nothing is closed to make room, nothing is turned off (a
    spare's buffers, lent ahead: spare.py)."""
    from . import devbuf

    if not devbuf.enabled() or _device_slots_failed:
        return None
    try:
        return DeviceSlot(sid, nbytes)
    except (devbuf.DriverError, OSError, RuntimeError):
        return None


def _device_slots_off(exc: BaseException) -> None:
    import sys

    _device_slots_failed.append(str(exc))
    print(f"kagent_harness: device buffers unavailable, host buffers instead: {exc}", file=sys.stderr)


def set_room_hook(hook: Optional[Callable[[int], None]]) -> None:
    """What new_slot calls with the bytes it needs when the device is full."""
    _room_hook[:] = [hook] if hook is not None else []


_room_hook: List[Callable[[int], None]] = []
_device_slots_failed: List[str] = []


def view_of(buf: torch.Tensor, shape: Tuple[int, ...], stride: Tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A strided view of dtype over the uint8 buffer ``buf``."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    need = span_bytes(shape, stride, itemsize)
    if need > buf.numel():
        raise ValueError(f"a view of {need} bytes does not fit a slot of {buf.numel()}")
    usable = (buf.numel() // itemsize) * itemsize
    typed = buf[:usable].view(dtype)
    return typed.as_strided(shape, stride, 0)


class _Mapping:
    """What keeps a runner's view of a slot alive (and page-locked)."""

    def __init__(self, mm: mmap.mmap, t: torch.Tensor, pinned: bool) -> None:
        self.mm, self.t, self.pinned = mm, t, pinned

    def __del__(self) -> None:
        if self.pinned:
            unpin(self.t)


def open_slot(desc: Dict[str, Any], fds: List[int], lock: bool = False) -> Tuple[torch.Tensor, Any]:
    """Runner side: the slot's bytes and what keeps them mapped (page-locked
    for the GPU with ``lock``)."""
    nbytes = int(desc["nbytes"])
    if desc.get("kind") == "cudavmm" and fds:
        from . import devbuf

        fd = fds.pop(0)
        try:
            mapping = devbuf.import_fd(fd, int(desc["size"]))
        finally:
            os.close(fd)
        return mapping.tensor(nbytes), mapping
    if desc.get("kind") != "memfd" or not fds:
        raise ValueError("a slot is a memfd (or an exported device allocation) passed with its descriptor")
    fd = fds.pop(0)
    mm = mmap.mmap(fd, nbytes)
    os.close(fd)
    t = torch.frombuffer(mm, dtype=torch.uint8, count=nbytes)
    return t, _Mapping(mm, t, lock and pin(t))
