"""How a worker keeps device memory for what it does next: the candidates'
runners it keeps between operations, which go (least recently used first)
when an operation needs their memory, and the spares (spare.py) among them.
``Room`` is the worker's part that decides; the worker (worker.py) calls it
before each operation.
"""

from __future__ import annotations

import sys
import time
from typing import Any, List, Tuple

from .spare import _trace

# How long making room waits for a closed runner's process to end.
RUNNER_EXIT_WAIT_S = 2.0
MAX_CANDIDATES = 8


class Room:
    """Room-making over ``self.device``, ``self.candidates`` (an ordered
    dict, least recently used first) and ``self.problems``."""

    def _live_spares(self) -> List[Any]:
        """The problems' spares that hold a runner (spare.py)."""
        return [p.spare for p in getattr(self, "problems", {}).values()
                if p.spare is not None and p.spare.rc is not None]

    def _drop(self, key: Tuple[str, str, str]) -> None:
        cand = self.candidates.pop(key, None)
        if cand is not None:
            if cand.module is not None:
                sys.modules.pop(cand.module.__name__, None)
            close = getattr(cand, "close", None)
            if close is not None:
                close()

    def _make_room(self, need: int, keep: Tuple[Any, ...] = (), ready: Any = None, want: int = 0) -> None:
        """Close the runners of kept candidates, least recently used first
        (except ``keep``), until ``need`` bytes of device memory are free: a
        candidate that holds memory (on purpose or not) cannot starve the
        problem, the checks or the next candidate. A closed candidate is
        loaded again when it is next timed.

        ``ready`` is the spare the operation will take (spare.py): the
        buffers lent to it are part of ``need`` and already made, so they
        count as free for it, and it is closed only after every kept
        candidate, where nothing else makes the room. ``want`` is room
        wanted beyond ``need`` (the next spare's buffers): kept candidates
        are closed for it, nothing else, and only where the buffers lent to
        them would make it."""
        import gc

        lent = ready.lent() if ready is not None else 0
        free = self.device.free_memory()
        if need <= 0 or free >= need - lent + want:
            return
        if want and free + self._kept_bytes(keep) < need - lent + want:
            want = 0
            if free >= need - lent:
                return
        began = time.monotonic()
        try:
            # Spares holding buffers lent ahead go first; a spare without
            # them holds little beyond its CUDA context and goes last.
            if self._spares("drop", lent=True, but=ready):
                gc.collect()
                self.device.empty_cache()
                if self.device.free_memory() >= need - lent + want:
                    return
            if self._close_kept(need - lent + want, keep) or self.device.free_memory() >= need - lent:
                return
            if lent:
                ready.drop()
                self.device.empty_cache()
                if self.device.free_memory() >= need:
                    return
            if self._spares("drop"):
                self.device.empty_cache()
                if self.device.free_memory() >= need:
                    return
            gc.collect()
            self.device.empty_cache()
        finally:
            _trace(f"make_room {time.monotonic() - began:.4f} s")

    def _kept_bytes(self, keep: Tuple[Any, ...]) -> int:
        """Bytes of the buffers lent to the kept candidates' runners (except
        ``keep``): what closing them gives back at least."""
        total = 0
        for key, cand in self.candidates.items():
            rc = getattr(cand, "rc", None)
            if key not in keep and rc is not None:
                total += sum(rc.layout().values())
        return total

    def _close_kept(self, need: int, keep: Tuple[Any, ...]) -> bool:
        """Close kept candidates' runners, least recently used first (except
        ``keep``), until ``need`` bytes are free; whether they are."""
        import gc

        for key in [k for k in self.candidates if k not in keep]:
            rc = getattr(self.candidates[key], "rc", None)
            self._drop(key)
            self.device.empty_cache()
            if self.device.free_memory() >= need:
                return True
            # What its process held comes back as the process ends.
            if rc is not None and rc.ended(RUNNER_EXIT_WAIT_S) and self.device.free_memory() >= need:
                return True
            gc.collect()
            self.device.empty_cache()
            if self.device.free_memory() >= need:
                return True
        return False

    def _drop_all(self) -> None:
        """Close every kept candidate's runner and return the memory."""
        import gc

        if not self.candidates and not self._spares("drop"):
            return
        for key in list(self.candidates):
            self._drop(key)
        gc.collect()
        self.device.empty_cache()

    def _spares(self, action: str, lent: bool = False, but: Any = None) -> int:
        """``drop`` or ``settle`` every problem's spare runner (spare.py),
        with ``lent`` only those holding buffers lent ahead, other than
        ``but``; how many."""
        spares = [s for s in self._live_spares() if (not lent or s.rc.layout()) and s is not but]
        for spare in spares:
            getattr(spare, action)()
        return len(spares)

    def _need(self, problem: Any, op: str) -> int:
        """Device memory an operation on ``problem`` needs free (memplan)."""
        from . import memplan
        from .device import nbytes

        first = problem.draws[0]
        x, y = nbytes(first.inputs), nbytes(first.ref)
        scratch = memplan.scratch_for(x, y)
        if op == "verify":
            return memplan.verify_need(x, y, problem.sets, len(problem.draws)) + scratch
        # bench, compare: two runners (input sets and outputs), the L2 flush buffer
        flush = 2 * self.device.l2_bytes() if self.device.is_gpu else 0
        return memplan.timing_bytes(x, y, problem.sets) + flush + scratch

    def _keep(self, problem: Any, key: Any) -> None:
        """Keep ``key``'s candidate (most recently used), and at most the
        problem's number of runners (memplan.kept_runners): the least
        recently used go."""
        self.candidates.move_to_end(key)
        limit = min(MAX_CANDIDATES, problem.kept)
        while len(self.candidates) > max(1, limit):
            self._drop(next(iter(self.candidates)))

    def _out_of_memory(self, kind: str, *keys: Any) -> None:
        """After a candidate ran out of memory (``kind`` is ``oom``): its
        runner (and what it held) goes, the allocator's cache goes back to
        the device."""
        import gc

        from .failures import OOM

        if kind != OOM:
            return
        for key in keys:
            if key is not None:
                self._drop(key)
        self._spares("drop")
        gc.collect()
        self.device.empty_cache()

    def _holders(self, keys: Tuple[Any, ...] = ()) -> bool:
        """Whether runners other than ``keys``' hold device memory: kept
        candidates, or spares lent their buffers ahead."""
        return any(k not in keys for k in self.candidates) or any(s.rc.layout() for s in self._live_spares())

    def _free_all(self, need: int) -> None:
        """Close every kept runner and wait for device memory on its way back."""
        from .memplan import wait_for_memory

        self._drop_all()
        if self.device.is_gpu:
            wait_for_memory(self.device.free_memory, need)
