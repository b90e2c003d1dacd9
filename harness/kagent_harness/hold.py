"""A hold: device work ahead of a timed call that occupies every SM of an
NVIDIA GPU for a given time, after clearing the L2 cache.

Timing enqueues a hold, then the start event, the call and the end event.
The host enqueues the call while the hold runs, so the host's launch time is
not in the span between the events. Because the hold's blocks fill every SM
(as many 1024-thread blocks per SM as the SM has room for threads), work the
call puts on another stream cannot run while the hold does: it starts after
the hold ends, at the start event, and either ends inside the span or keeps
the device busy after the end event (timing.py measures that tail). A hold
that spun on one thread only (``torch.cuda._sleep``) would leave the other
SMs free for such work, hidden from the events.

The flush is part of the hold (each block first reads its share of the
flush buffer, then spins until the hold's time has passed since the block
started), so nothing separates the hold's end from the start event. Reading
rather than writing leaves the L2 holding clean lines: the timed call does
not pay for writing the flush's dirty lines back (what Nsight Compute's
cache control also avoids), and whatever an earlier call left dirty is
written back during the hold.

NVIDIA only (``%globaltimer``); elsewhere Device.spin falls back to a
one-thread spin and a separate flush.
"""

from __future__ import annotations

from typing import Any, List, Optional

import torch

# Threads per block (Triton num_warps=32).
BLOCK_THREADS = 1024
# Elements each block zeroes per step.
STORE_BLOCK = 4096

_kernel: List[Any] = []
_failed: List[str] = []


def _compile() -> Any:
    import triton
    import triton.language as tl
    from triton.language.extra.cuda import globaltimer

    @triton.jit
    def _hold(buf, n, chunk, ns, BLOCK: tl.constexpr):
        start = globaltimer()
        lo = tl.program_id(0).to(tl.int64) * chunk
        acc = tl.zeros([BLOCK], dtype=tl.int32)
        for off in range(0, chunk, BLOCK):
            idx = lo + off + tl.arange(0, BLOCK)
            acc += tl.load(buf + idx, mask=(idx < n) & (idx < lo + chunk), other=0)
        # The loads must not be optimised away: their sum is stored where it
        # is one particular value (the buffer is scratch either way).
        total = tl.sum(acc, axis=0)
        tl.store(buf + lo, total, mask=(total == 0x5EED) & (lo < n))
        while globaltimer() - start < ns:
            pass

    return _hold


def available() -> bool:
    """Whether holds can run here (an NVIDIA GPU, Triton, the kernel works)."""
    return bool(_kernel) or (not _failed and torch.cuda.is_available() and not getattr(torch.version, "hip", None))


def failure() -> str:
    """Why holds are off in this process ("" when they are not)."""
    return _failed[0] if _failed else ""


def blocks(device: Optional[int] = None) -> int:
    """The grid that fills every SM: SMs times the blocks of BLOCK_THREADS
    threads one SM holds."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device() if device is None else device)
    per_sm = max(1, int(getattr(props, "max_threads_per_multi_processor", 2048)) // BLOCK_THREADS)
    return int(props.multi_processor_count) * per_sm


_scratch: List[torch.Tensor] = []


def hold(ms: float, flush: Optional[torch.Tensor]) -> bool:
    """Enqueue a hold of ``ms`` milliseconds on the current stream, reading
    ``flush`` (an int32 tensor) first. False where holds are not available
    (nothing was enqueued)."""
    if not available():
        return False
    try:
        if not _kernel:
            _kernel.append(_compile())
        grid = blocks()
        if flush is None or flush.numel() == 0:
            if not _scratch:
                _scratch.append(torch.empty(1, dtype=torch.int32, device="cuda"))
            buf = _scratch[0]
        else:
            buf = flush
        n = buf.numel()
        chunk = (n + grid - 1) // grid
        _kernel[0][(grid,)](buf, n, chunk, max(0, int(ms * 1e6)), BLOCK=STORE_BLOCK, num_warps=BLOCK_THREADS // 32)
        return True
    except Exception as exc:  # noqa: BLE001 - any failure turns holds off for this process
        _failed.append(f"{type(exc).__name__}: {exc}"[:300])
        _kernel.clear()
        return False
