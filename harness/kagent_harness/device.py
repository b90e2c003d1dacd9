"""The device the worker owns: cuda (NVIDIA or ROCm builds of torch), xpu
(Intel GPUs through torch.xpu; not yet run on Intel hardware) or cpu.

Everything the harness needs from torch for timing and memory is captured when
this module is imported, before any candidate runs, so a candidate that patches
``torch.cuda.synchronize`` or ``time.perf_counter`` cannot change the harness's
measurements (the guard reports the patch as well).
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from typing import Any, Callable, Dict, Iterator, List, Optional

import torch

from . import hold

perf_counter: Callable[[], float] = time.perf_counter
# The cpu device's clock: CPU time of the worker process. A call is timed by
# the work it did, not by the wall clock, so other processes on the machine
# (a busy CI runner) do not move its time; the worker runs torch on one
# thread (see Device), so CPU time is the call's own time.
process_time: Callable[[], float] = time.process_time

_HAS_CUDA_API = hasattr(torch, "cuda")
_cuda_sync: Optional[Callable[..., None]] = torch.cuda.synchronize if _HAS_CUDA_API else None
_Event: Any = torch.cuda.Event if _HAS_CUDA_API else None
_ev_record: Any = torch.cuda.Event.record if _HAS_CUDA_API else None
_ev_elapsed: Any = torch.cuda.Event.elapsed_time if _HAS_CUDA_API else None
_ev_sync: Any = torch.cuda.Event.synchronize if _HAS_CUDA_API else None
# A kernel that keeps the device busy for a number of clock cycles (CUDA and
# ROCm builds of torch): timing enqueues it ahead of a call's start event.
_cuda_sleep: Optional[Callable[[int], None]] = getattr(torch.cuda, "_sleep", None) if _HAS_CUDA_API else None
# Cycles of the calibration spin (about 1 ms on a 2 GHz clock).
SPIN_CALIBRATION_CYCLES = 2_000_000
# The caching allocator's statistics, as torch's C binding returns them
# (nested: allocated_bytes -> all -> current). torch.cuda.memory_allocated
# reads them through Python functions of torch.cuda.memory that a candidate
# could replace; the binding captured here is what Device.allocated_bytes
# reads (the leak check's figure).
_cuda_memory_stats: Optional[Callable[[int], Dict[str, Any]]] = getattr(torch._C, "_cuda_memoryStats", None)

_XPU: Any = getattr(torch, "xpu", None)
_xpu_sync: Optional[Callable[..., None]] = getattr(_XPU, "synchronize", None)
_XEvent: Any = getattr(_XPU, "Event", None)
_xev_record: Any = getattr(_XEvent, "record", None)
_xev_elapsed: Any = getattr(_XEvent, "elapsed_time", None)


class Device:
    """A torch device with the few operations the harness needs."""

    def __init__(self, kind: str) -> None:
        if kind not in ("cuda", "xpu", "cpu"):
            raise ValueError(f"unsupported KAGENT_DEVICE {kind!r} (want cuda, xpu or cpu)")
        if kind == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("KAGENT_DEVICE=cuda but torch.cuda.is_available() is False")
        if kind == "xpu" and (_XPU is None or not _XPU.is_available() or _XEvent is None):
            raise RuntimeError("KAGENT_DEVICE=xpu but this torch has no usable torch.xpu (needs torch >= 2.5 with XPU support)")
        self.type = kind
        if kind == "cuda":
            self.torch_device = torch.device("cuda", torch.cuda.current_device())
        elif kind == "xpu":
            self.torch_device = torch.device("xpu", _XPU.current_device())
        else:
            self.torch_device = torch.device("cpu")
            # One intra-op thread: no thread spins waiting for a preempted
            # sibling, so process_time counts the call's work once.
            torch.set_num_threads(1)
        self._spin_rate = 0.0  # device cycles per millisecond, measured on first use
        # The events' own span measured before any candidate's process
        # existed (timing.reference_bracket); None until then.
        self.reference_bracket_ms: Optional[float] = None

    @property
    def is_cuda(self) -> bool:
        """The CUDA API (NVIDIA, or ROCm through HIP)."""
        return self.type == "cuda"

    @property
    def is_gpu(self) -> bool:
        """An accelerator with its own queue and timing events (cuda or xpu)."""
        return self.type in ("cuda", "xpu")

    def _api(self) -> Any:
        return torch.cuda if self.is_cuda else _XPU

    def make_context(self) -> bool:
        """Make this process's device context now (the first allocation
        makes it); False on the CPU or where it failed (the first request
        that uses the device then reports why)."""
        if not self.is_gpu:
            return False
        try:
            torch.empty(1, device=self.torch_device)
            self.synchronize()
        except Exception:  # noqa: BLE001 - reported by the first use of the device
            return False
        return True

    def synchronize(self) -> None:
        """Wait for all work on the device (all streams)."""
        if self.is_cuda and _cuda_sync is not None:
            _cuda_sync()
        elif self.type == "xpu" and _xpu_sync is not None:
            _xpu_sync()

    def default_device(self) -> contextlib.AbstractContextManager:
        """Context in which factory calls without a device allocate on this
        device (torch >= 2.0); a no-op on older torch, where callers fall back
        to ``.to(device)``."""
        if self.is_gpu and hasattr(torch.device, "__enter__"):
            return self.torch_device  # type: ignore[return-value]
        return contextlib.nullcontext()

    def info(self) -> Dict[str, Any]:
        if self.type == "xpu":
            props = _XPU.get_device_properties(self.torch_device)
            return {
                "type": "xpu",
                "name": props.name,
                "capability": str(getattr(props, "version", "") or ""),
                "total_memory": int(props.total_memory),
                "l2_bytes": int(getattr(props, "l2_cache_size", 0) or 0),
                "sm_count": int(getattr(props, "max_compute_units", 0) or getattr(props, "gpu_subslice_count", 0) or 0),
                "hip": False,
            }
        if self.is_cuda:
            props = torch.cuda.get_device_properties(self.torch_device)
            return {
                "type": "cuda",
                "name": props.name,
                "capability": f"{props.major}.{props.minor}",
                "total_memory": int(props.total_memory),
                "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0),
                "sm_count": int(props.multi_processor_count),
                "hip": bool(getattr(torch.version, "hip", None)),
            }
        return {
            "type": "cpu",
            "name": platform.processor() or platform.machine() or "cpu",
            "capability": "",
            "total_memory": _meminfo("MemTotal"),
            "l2_bytes": _cpu_l2_bytes(),
            "sm_count": os.cpu_count() or 1,
            "hip": False,
        }

    def l2_bytes(self) -> int:
        return int(self.info().get("l2_bytes") or 0)

    def free_memory(self) -> int:
        """Bytes that could still be allocated (free on the device plus the
        allocator's cached free blocks), within KAGENT_MEMORY_LIMIT when set
        (on a GPU this process's allocations count against the limit)."""
        from .memplan import memory_limit

        limit = memory_limit()
        if self.is_gpu:
            api = self._api()
            allocated = api.memory_allocated(self.torch_device)
            cached = api.memory_reserved(self.torch_device) - allocated
            if hasattr(api, "mem_get_info"):
                free, _total = api.mem_get_info(self.torch_device)
            else:
                free = int(self.info()["total_memory"]) - api.memory_reserved(self.torch_device)
            free = int(free + max(cached, 0))
            return min(free, max(0, limit - allocated)) if limit is not None else free
        free = _meminfo("MemAvailable")
        return min(free, limit) if limit is not None else free

    def allocated_bytes(self) -> Optional[int]:
        """Bytes of device memory this process's live tensors hold (not
        the allocator's cached free blocks); None off a GPU."""
        if not self.is_gpu:
            return None
        if self.is_cuda and _cuda_memory_stats is not None:
            try:
                return int(_cuda_memory_stats(self.torch_device.index)["allocated_bytes"]["all"]["current"])
            except (KeyError, TypeError, RuntimeError):
                pass  # a torch whose binding differs: its Python API below
        return int(self._api().memory_allocated(self.torch_device))

    def empty_cache(self) -> None:
        if self.is_gpu:
            self._api().empty_cache()

    def health_check(self) -> Optional[str]:
        """None if the device still works, else the error (CUDA errors are sticky)."""
        if not self.is_gpu:
            return None
        try:
            self.synchronize()
            torch.zeros(1, device=self.torch_device).add_(1).item()
        except BaseException as exc:  # noqa: BLE001 - any failure means a poisoned context
            return f"{type(exc).__name__}: {exc}"
        return None

    # Timers -----------------------------------------------------------------

    @property
    def can_spin(self) -> bool:
        """Whether spin() can keep this device busy (CUDA/ROCm with torch.cuda._sleep)."""
        return self.is_cuda and _cuda_sleep is not None

    def spin_cycles_per_ms(self) -> float:
        """The spin kernel's clock rate, measured once with events (the
        largest of three, so a slow first launch does not lower it)."""
        if self._spin_rate <= 0 and self.can_spin:
            rates = []
            for _ in range(3):
                a, b = self.event(), self.event()
                self.record(a)
                _cuda_sleep(SPIN_CALIBRATION_CYCLES)  # type: ignore[misc]
                self.record(b)
                self.synchronize()
                ms = self.elapsed_ms(a, b)
                if ms > 0:
                    rates.append(SPIN_CALIBRATION_CYCLES / ms)
            self._spin_rate = max(rates) if rates else 1e6
        return self._spin_rate

    def spin(self, ms: float, flush: Optional[torch.Tensor] = None) -> None:
        """Enqueue about ``ms`` milliseconds of device work that does nothing,
        after passing the L2 flush buffer ``flush`` through the cache: what the host enqueues
        after it runs once the spin ends, so its own launch time is not in a
        span that starts after the spin. On NVIDIA GPUs the spin is a hold
        (hold.py) that fills every SM, so work on other streams cannot run
        during it; elsewhere the flush, then a one-thread spin."""
        if self.is_cuda and (ms > 0 or flush is not None) and hold.hold(ms, flush):
            return
        if flush is not None:
            flush.zero_()
        if ms > 0 and self.can_spin:
            _cuda_sleep(max(1, int(ms * self.spin_cycles_per_ms())))  # type: ignore[misc]

    @property
    def holds(self) -> bool:
        """Whether spin() fills every SM (hold.py) in this process."""
        return self.is_cuda and hold.available()

    def tail_ms(self, end: Any) -> float:
        """Once the event ``end`` is reached, how long (ms, by the host's
        clock) the device stays busy with work of any stream: about zero
        unless work was left running outside the stream ``end`` was recorded
        on. 0 off CUDA."""
        if not self.is_cuda:
            return 0.0
        _ev_sync(end)
        t = perf_counter()
        self.synchronize()
        return (perf_counter() - t) * 1e3

    def event(self) -> Any:
        """A timing event (cuda, xpu) or a host timestamp holder (cpu)."""
        if self.is_cuda:
            return _Event(enable_timing=True)
        if self.type == "xpu":
            return _XEvent(enable_timing=True)
        return _HostMark()

    def record(self, ev: Any) -> None:
        if self.is_cuda:
            _ev_record(ev)
        elif self.type == "xpu":
            _xev_record(ev)
        else:
            ev.t = process_time()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two recorded events (after synchronize on a GPU)."""
        if self.is_cuda:
            return float(_ev_elapsed(start, end))
        if self.type == "xpu":
            return float(_xev_elapsed(start, end))
        return (end.t - start.t) * 1e3


class _HostMark:
    __slots__ = ("t",)

    def __init__(self) -> None:
        self.t = 0.0


def _meminfo(key: str) -> int:
    try:
        with open("/proc/meminfo", "r", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _cpu_l2_bytes() -> int:
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(base)):
            path = os.path.join(base, entry)
            with open(os.path.join(path, "level"), encoding="ascii") as f:
                if f.read().strip() != "2":
                    continue
            with open(os.path.join(path, "size"), encoding="ascii") as f:
                size = f.read().strip().upper()
            mult = 1
            if size.endswith("K"):
                mult, size = 1024, size[:-1]
            elif size.endswith("M"):
                mult, size = 1 << 20, size[:-1]
            return int(size) * mult
    except (OSError, ValueError):
        pass
    return 0


def tensors_in(obj: Any) -> Iterator[torch.Tensor]:
    """All tensors in a nested structure of lists, tuples and dicts."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from tensors_in(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from tensors_in(item)


def tensors_of(obj: Any, depth: int = 0) -> List[torch.Tensor]:
    """The tensors of nested lists and tuples, at most 8 deep (what a
    candidate's call returned: it may nest without end)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)) and depth < 8:
        return [t for x in obj for t in tensors_of(x, depth + 1)]
    return []


def nbytes(obj: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors_in(obj))


def map_tensors(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply fn to every tensor of a nested structure, keeping the structure."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, list):
        return [map_tensors(x, fn) for x in obj]
    if isinstance(obj, tuple):
        return tuple(map_tensors(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def clone_all(obj: Any) -> Any:
    """Deep copy of the tensors of a structure (same strides where possible)."""
    return map_tensors(obj, lambda t: t.detach().clone())


def describe_tensors(obj: Any) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for t in tensors_in(obj):
        out.append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "device": str(t.device)})
    return out
