"""Device memory planning: what a loaded problem and each operation need, and
what the worker does when the device is short.

Sizes (PROTOCOL.md, Memory): X the bytes of one draw's inputs, Y of its
outputs, P of the model's parameters and buffers, F the L2 flush buffer, S
the comparison scratch. A problem stores D draws (D·(X + Y)); verification
needs about ``VERIFY_X``·X + ``VERIFY_Y``·Y more between the judge and the
candidate's runner (input copies, every draw's output, the runner's copy of
its inputs and its own output); timing needs the runner's input copies, an
output, F and S.

Each candidate's runner holds B input buffer sets (``buffer_sets``:
verification puts each call's inputs in one of them at random, timing rotates
through them so that no call finds the previous call's inputs in the L2) and
two outputs (its own and the shared one): R = B·X + 2·Y. B is 4 where four
copies of the inputs take at most ``SET_SHARE`` of the device, fewer for large
inputs (which are many times the L2, so rotation changes nothing); the worker
keeps at most ``kept_runners`` runners alive between operations, fewer where
their R would take more than ``KEEP_SHARE`` of the device.

``plan_draws`` decides, once the first draw is built, how many draws the
problem stores: all requested where they fit with what the worker makes room
for before a verification (``verify_need``: verification's working memory,
the new runner's buffers and the outputs it keeps), else two (the first public seed and the secret one), else the load
fails with kind ``oom`` and a message naming the sizes. ``KAGENT_MEMORY_LIMIT``
(bytes, or with a K/M/G/T suffix) caps the device memory the worker plans
with, for a GPU shared with other jobs.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from .chunks import CHUNK

# Verification's working memory beyond the stored draws, in X and Y (judge:
# draw 1's copy, the call's copy, the near-duplicate's copy; every draw's
# output and the rerun's; runner: its input copy and its output).
VERIFY_X = 4
VERIFY_Y = 3
# Input buffer sets per runner, at most and where the inputs are large.
MAX_SETS = 4
SET_SHARE = 0.05
# Runners the worker keeps between operations: at most MAX_KEPT, at least
# two (a comparison runs the candidate and the best), and their buffers at
# most KEEP_SHARE of the device.
MAX_KEPT = 8
KEEP_SHARE = 0.3
# The least number of draws a problem may store (a public one and the secret one).
MIN_DRAWS = 2
# Plan with this share of the free memory (the allocator rounds up, the
# reference and the candidate allocate temporaries).
PLAN_FRACTION = 0.9


def memory_limit() -> Optional[int]:
    """KAGENT_MEMORY_LIMIT in bytes, or None when unset or unreadable."""
    raw = os.environ.get("KAGENT_MEMORY_LIMIT", "").strip()
    if not raw:
        return None
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    mult = 1
    if raw[-1].lower() in scale:
        mult, raw = scale[raw[-1].lower()], raw[:-1]
    elif raw[-1:].lower() == "b" and raw[-2:-1].lower() in scale:
        mult, raw = scale[raw[-2].lower()], raw[:-2]
    try:
        value = float(raw)
    except ValueError:
        return None
    return int(value * mult) if value > 0 else None


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


@dataclass
class Plan:
    """How many draws a problem stores, and why."""

    draws: int
    per_draw: int  # X + Y
    need: int  # stored draws plus verification's working memory
    free: int  # what the plan had (free when the first draw was built, plus that draw)
    note: str

    def as_dict(self) -> dict:
        return {"draws": self.draws, "need_bytes": self.need, "free_bytes": self.free, "note": self.note}


def capacity(total: int) -> int:
    """The device memory kagent plans with: the device's total, or
    KAGENT_MEMORY_LIMIT where that is lower."""
    limit = memory_limit()
    return min(total, limit) if limit is not None and total > 0 else (limit or total)


def buffer_sets(x: int, cap: int) -> int:
    """Input buffer sets per runner for inputs of ``x`` bytes on a device of ``cap`` bytes."""
    if x <= 0 or cap <= 0:
        return MAX_SETS
    return max(1, min(MAX_SETS, int(SET_SHARE * cap) // x))


def runner_bytes(x: int, y: int, sets: int) -> int:
    """Device memory of one candidate's runner: its input sets and two outputs."""
    return sets * x + 2 * y


def kept_runners(x: int, y: int, sets: int, cap: int) -> int:
    """How many runners the worker keeps alive between operations."""
    r = runner_bytes(x, y, sets)
    if r <= 0 or cap <= 0:
        return MAX_KEPT
    return max(2, min(MAX_KEPT, int(KEEP_SHARE * cap) // r))


def verify_bytes(x: int, y: int, sets: int) -> int:
    """Working memory of a verification beyond the stored draws: the judge's
    copies and outputs, and the candidate's runner with all its input sets."""
    return VERIFY_X * x + VERIFY_Y * y + (sets - 1) * x


def verify_need(x: int, y: int, sets: int, draws: int) -> int:
    """What the worker makes room for before a verification, beyond the
    stored draws and the scratch: verification's working memory, the new
    candidate's runner (``runner_bytes``) and the output of every stored draw,
    which the runner keeps until verification ends."""
    return verify_bytes(x, y, sets) + runner_bytes(x, y, sets) + draws * y


def timing_bytes(x: int, y: int, sets: int) -> int:
    """Working memory of a comparison beyond the stored draws: two runners."""
    return 2 * runner_bytes(x, y, sets)


def scratch_for(x: int, y: int) -> int:
    """The comparison scratch of a problem with X and Y bytes: about 40
    bytes per element of a CHUNK piece at most, less for tensors smaller than
    a piece, plus the checksums' 32 MiB of weights."""
    return min(40 * CHUNK, 10 * (x + y)) + (32 << 20)


def need_for(draws: int, x: int, y: int, params: int, flush: int, sets: int = 1) -> int:
    """Device memory of a problem storing ``draws`` draws while a candidate
    is verified (all the worker makes room for: ``verify_need``), or two are
    compared (runners of ``sets`` input sets)."""
    work = max(verify_need(x, y, sets, draws), timing_bytes(x, y, sets))
    return draws * (x + y) + work + 2 * params + flush + scratch_for(x, y)


def plan_draws(requested: int, x: int, y: int, params: int, flush: int, free_now: int, held: int,
               sets: int = 1) -> Plan:
    """The draws to store. ``free_now``: free device memory with the first
    draw (``held`` bytes, its inputs and reference) already built."""
    budget = int(PLAN_FRACTION * (free_now + held))
    per = x + y
    need = need_for(requested, x, y, params, flush, sets)
    if need <= budget:
        return Plan(requested, per, need, free_now + held, "")
    for d in range(requested - 1, MIN_DRAWS - 1, -1):
        need_d = need_for(d, x, y, params, flush, sets)
        if need_d <= budget:
            return Plan(d, per, need_d, free_now + held,
                        f"stores {d} of {requested} draws: {requested} need about {gib(need)} with verification's "
                        f"working memory, {gib(free_now + held)} is free ({gib(x)} of inputs and {gib(y)} of outputs "
                        f"per draw)")
    need_min = need_for(MIN_DRAWS, x, y, params, flush, sets)
    return Plan(0, per, need_min, free_now + held,
                f"the problem needs about {gib(need_min)} of device memory (2 stored draws of {gib(x)} of inputs and "
                f"{gib(y)} of outputs, and verification's working memory), and {gib(free_now + held)} is free: "
                f"time a smaller size (kagent.yaml sizes and --size, or get_inputs) or free the device")


# Waiting for device memory that other processes are giving back: poll this
# often, give up when free memory has not grown by GROWTH bytes for STILL_S
# seconds, or after WAIT_S in all.
POLL_S = 0.25
STILL_S = 5.0
WAIT_S = 60.0
GROWTH = 256 << 20


def wait_for_memory(free: Callable[[], int], need: int, *, still_s: float = STILL_S, wait_s: float = WAIT_S,
                    sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    """Wait while free device memory is below ``need`` and still growing (a
    process that ended, a replaced worker or a closed runner returns its
    memory to the driver a little after it is gone); return what is free.
    Where nothing is coming back it costs ``still_s``."""
    start = last_growth = clock()
    best = now = free()
    while now < need:
        t = clock()
        if t - last_growth >= still_s or t - start >= wait_s:
            break
        sleep(POLL_S)
        now = free()
        if now >= best + GROWTH:
            best, last_growth = now, clock()
    return now


def tensor_bytes_alive() -> List[Any]:
    """Storages and bytes of the torch tensors the garbage collector can see in
    this process, by device type: what the process holds, for the memory
    op and the leak tests."""
    import gc

    import torch

    by: dict = {}
    seen = set()
    for obj in gc.get_objects():
        try:
            is_t = isinstance(obj, torch.Tensor)
        except ReferenceError:
            continue
        if not is_t or obj.device.type == "meta":
            continue
        try:
            st = obj.untyped_storage()
            key = (obj.device.type, st.data_ptr(), st.nbytes())
        except (RuntimeError, NotImplementedError):
            continue
        if key in seen:
            continue
        seen.add(key)
        c, b = by.get(obj.device.type, (0, 0))
        by[obj.device.type] = (c + 1, b + int(key[2]))
    return [{"device": k, "storages": v[0], "bytes": v[1]} for k, v in sorted(by.items())]
