"""Device memory shared between the judge and a runner (CUDA virtual memory
management, exported as a POSIX file descriptor).

The judge allocates a buffer with ``cuMemCreate`` (requested handle type
POSIX fd), maps it into its own address space and exports the allocation as
a file descriptor, which it passes to the candidate's runner with the slot's
description (``kind: "cudavmm"``); the runner imports it, maps it and sees
the same device memory. Unlike CUDA IPC this needs no shared PID namespace
(the descriptor is the capability), and the runner reaches that allocation
only, not the judge's allocator segments. Inputs then cross from the judge's
copy to the runner's view device to device, and outputs back the same way:
no host copies.

On by default on NVIDIA GPUs; ``KAGENT_DEVICE_BUFFERS=0`` turns them off. An
allocation that finds the device full gets a host buffer (``shm.Slot``) after
the worker made room; any other failure falls back to host buffers for the
rest of the process. The buffers live in the judge's device memory, which the
memory plan (memplan.py) counts. On an H200 they cut a tune variant of a 6.4 GB
problem to 1.3-1.6 s against about 14 s with host buffers
(docs/results/2026-12-04-spare-runner); a greedy run whose candidates
allocate until the device is full and leak ran all its rounds with them on an
H100 (docs/results/2026-12-05-context-and-stage).

Tensors over a mapping are made through ``__cuda_array_interface__``
(``torch.as_tensor`` keeps the interface object alive, and the object keeps
the mapping): the memory is unmapped only when no tensor over it is left.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, List, Optional, Tuple

import torch

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class CUmemLocation(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class CUmemAllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class CUmemAllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", CUmemLocation),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", CUmemAllocFlags)]


class CUmemAccessDesc(ctypes.Structure):
    _fields_ = [("location", CUmemLocation), ("flags", ctypes.c_int)]


CUDA_ERROR_OUT_OF_MEMORY = 2


class DriverError(RuntimeError):
    def __init__(self, msg: str, code: int = 0) -> None:
        super().__init__(msg)
        self.code = code

    @property
    def out_of_memory(self) -> bool:
        return self.code == CUDA_ERROR_OUT_OF_MEMORY


_lib: List[Any] = []


def _cuda() -> Any:
    if not _lib:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, sz, vp = ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_void_p
        sigs = {
            "cuCtxGetDevice": [ctypes.POINTER(ctypes.c_int)],
            "cuMemGetAllocationGranularity": [ctypes.POINTER(sz), ctypes.POINTER(CUmemAllocationProp), ctypes.c_int],
            "cuMemCreate": [ctypes.POINTER(u64), sz, ctypes.POINTER(CUmemAllocationProp), u64],
            "cuMemExportToShareableHandle": [vp, u64, ctypes.c_int, u64],
            "cuMemImportFromShareableHandle": [ctypes.POINTER(u64), vp, ctypes.c_int],
            "cuMemAddressReserve": [ctypes.POINTER(u64), sz, sz, u64, u64],
            "cuMemMap": [u64, sz, sz, u64, u64],
            "cuMemSetAccess": [u64, sz, ctypes.POINTER(CUmemAccessDesc), sz],
            "cuMemUnmap": [u64, sz],
            "cuMemRelease": [u64],
            "cuMemAddressFree": [u64, sz],
        }
        for name, args in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = ctypes.c_int
        _lib.append(lib)
    return _lib[0]


def _check(code: int, what: str) -> None:
    if code != 0:
        raise DriverError(f"{what} failed with CUDA driver error {code}", code)


def enabled() -> bool:
    """On an NVIDIA build of torch with a GPU, unless KAGENT_DEVICE_BUFFERS=0."""
    return (os.environ.get("KAGENT_DEVICE_BUFFERS", "").strip() != "0" and torch.cuda.is_available()
            and not getattr(torch.version, "hip", None))


def _device() -> int:
    torch.cuda.init()
    torch.empty(1, device="cuda")  # the primary context is current on this thread
    dev = ctypes.c_int()
    _check(_cuda().cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
    return dev.value


def _prop(dev: int) -> CUmemAllocationProp:
    p = CUmemAllocationProp()
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE
    p.location.id = dev
    return p


class _Interface:
    """What torch.as_tensor reads; holds the mapping alive."""

    def __init__(self, mapping: "Mapping", n: int) -> None:
        self.mapping = mapping
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (mapping.ptr, False),
                                         "version": 2, "strides": None}


class Mapping:
    """A mapped allocation: its handle, address and size; unmapped and
    released when the last reference goes."""

    def __init__(self, handle: int, size: int, dev: int) -> None:
        cu = _cuda()
        self.handle, self.size, self.ptr = handle, size, 0
        ptr = ctypes.c_ulonglong()
        _check(cu.cuMemAddressReserve(ctypes.byref(ptr), size, 0, 0, 0), "cuMemAddressReserve")
        self.ptr = ptr.value
        try:
            _check(cu.cuMemMap(self.ptr, size, 0, handle, 0), "cuMemMap")
            access = CUmemAccessDesc()
            access.location.type = CU_MEM_LOCATION_TYPE_DEVICE
            access.location.id = dev
            access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            _check(cu.cuMemSetAccess(self.ptr, size, ctypes.byref(access), 1), "cuMemSetAccess")
        except DriverError:
            self.release()
            raise

    def tensor(self, nbytes: int) -> torch.Tensor:
        return torch.as_tensor(_Interface(self, nbytes), device="cuda")

    def release(self) -> None:
        cu = _cuda()
        if self.ptr:
            cu.cuMemUnmap(self.ptr, self.size)
            cu.cuMemAddressFree(self.ptr, self.size)
            self.ptr = 0
        if self.handle:
            cu.cuMemRelease(self.handle)
            self.handle = 0

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def allocate(nbytes: int) -> Tuple[Mapping, int]:
    """A new device allocation of at least nbytes, mapped here, and a file
    descriptor that exports it (the caller closes it)."""
    cu = _cuda()
    dev = _device()
    prop = _prop(dev)
    gran = ctypes.c_size_t()
    _check(cu.cuMemGetAllocationGranularity(ctypes.byref(gran), ctypes.byref(prop), CU_MEM_ALLOC_GRANULARITY_MINIMUM),
           "cuMemGetAllocationGranularity")
    g = max(1, gran.value)
    size = max(g, (nbytes + g - 1) // g * g)
    handle = ctypes.c_ulonglong()
    _check(cu.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(prop), 0), "cuMemCreate")
    fd = ctypes.c_int(-1)
    try:
        _check(cu.cuMemExportToShareableHandle(ctypes.byref(fd), handle.value, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                               0), "cuMemExportToShareableHandle")
        mapping = Mapping(handle.value, size, dev)
    except DriverError:
        cu.cuMemRelease(handle.value)
        if fd.value >= 0:
            os.close(fd.value)
        raise
    return mapping, fd.value


def import_fd(fd: int, size: int) -> Mapping:
    """The runner's side: map the allocation a descriptor exports."""
    cu = _cuda()
    dev = _device()
    handle = ctypes.c_ulonglong()
    _check(cu.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd),
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), "cuMemImportFromShareableHandle")
    try:
        return Mapping(handle.value, size, dev)
    except DriverError:
        cu.cuMemRelease(handle.value)
        raise


def self_test() -> Dict[str, Any]:
    """Export a buffer, import it in a child process, write there, read here."""
    import subprocess
    import sys

    mapping, fd = allocate(64 << 20)
    t = mapping.tensor(64 << 20)
    t.fill_(7)
    torch.cuda.synchronize()
    code = ("import os, sys, torch; sys.path.insert(0, %r); from kagent_harness import devbuf; "
            "m = devbuf.import_fd(int(sys.argv[1]), int(sys.argv[2])); v = m.tensor(64 << 20); "
            "assert int(v[123]) == 7, int(v[123]); v.fill_(9); torch.cuda.synchronize(); print('ok')"
            % os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code, str(fd), str(mapping.size)], pass_fds=[fd],
                         capture_output=True, text=True, timeout=120)
    os.close(fd)
    torch.cuda.synchronize()
    return {"child": out.stdout.strip() or out.stderr.strip()[-300:], "seen_here": int(t[123]),
            "passed": out.returncode == 0 and int(t[123]) == 9}


if __name__ == "__main__":
    print(self_test())
