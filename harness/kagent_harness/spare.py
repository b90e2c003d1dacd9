"""A runner started ahead of the next candidate: the spare.

Every candidate gets a runner of its own, and starting one costs time no
kernel spends: the fork and the sandbox (about 0.05-0.15 s), CUDA's context
(about 0.2 s on an H100, ``Device.make_context``) and, with device buffers,
mapping the buffers the judge lends it (about 0.14 s with the context on an
H200 at 6.4 GB, almost nothing once the context is made). A tune run
verifies one variant after another, so the judge starts the next
candidate's runner while it verifies the current one: the spare starts,
makes its context and maps its buffers in its own process, and the next
verification takes it ready. Where the verification times its candidate
first (the quick cut), the spare's process starts before that timing and
is sent its context and buffers right after it (``to_device``), so the
context is made while the rest of the verification runs.

What makes this safe:
- A spare is a fresh process from the same fork server, with no candidate
  code in it until the verification that takes it sends the candidate; the
  buffers it is lent are new allocations, empty, keyed and sized as the
  problem's last candidate used them (``record``).
- It touches the device (its context, its lent buffers) only during a
  verification, never during a timing (its process alone may start before a
  quick timing: a fork, imports, no device work): every timing first waits
  until the spare has answered all it was sent (``settle``), so nothing of
  it runs on the device while a kernel is timed.
- Buffers are lent ahead only where they are device buffers (host buffers
  are page-locked, which costs the judge's own time), take at most a share
  of the device (``lend_share``) and leave the running verification's working
  memory free. They are part of what the next verification needs, not more:
  the worker counts them as made when it makes room for the verification
  that takes the spare (``lent``), closing kept candidates before it, and
  the running verification's own runner counts what it was lent likewise.
  Where the worker makes room for anything else it closes a spare holding
  lent buffers first, one without them (little beyond its CUDA context) last.
- A spare that failed to start, or does not answer within ``SPARE_WAIT_S``
  (another process of the sandbox may stop it), is closed, and the candidate
  gets a runner started for it, as before; one that dies while the candidate
  is sent to it (another process may kill it) has the candidate loaded again
  in a runner of its own (remote.load_remote), so that only the candidate's
  own crash fails it.

``KAGENT_SPARE_RUNNER=0`` turns spares off, ``1`` on; by default they are on
for GPUs and off for the CPU. ``KAGENT_SPARE_LEND_SHARE`` (a fraction of the
device, 0 to 1) sets the share below which buffers are lent ahead.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

# How long a verification or a timing waits for a spare that has not
# answered yet (it starts in about 0.1 s). A spare stopped or stalled by
# another process is then closed and a runner started as before: it can
# delay the next candidate by this much, never decide its verdict.
SPARE_WAIT_S = 10.0
# Free device memory kept on top of verification's working memory and the
# spare's buffers when a spare is started.
HEADROOM = 1 << 30
# Buffers are lent ahead only where together they take at most this share of
# the device (KAGENT_SPARE_LEND_SHARE overrides it). On an H200 a 6.4 GB
# problem's spare, lent its 13 GB, was closed before every verification and
# cost more than it saved: the room made for a verification counted the
# spare's buffers twice, as allocated and as still needed (``lent`` now
# keeps them apart); whether larger shares pay is still to be measured.
LEND_SHARE = 0.05


def lend_share() -> float:
    """KAGENT_SPARE_LEND_SHARE where it is a fraction in [0, 1], else LEND_SHARE."""
    raw = os.environ.get("KAGENT_SPARE_LEND_SHARE", "").strip()
    try:
        v = float(raw)
    except ValueError:
        return LEND_SHARE
    return v if 0.0 <= v <= 1.0 else LEND_SHARE


def enabled(device: Any) -> bool:
    """KAGENT_SPARE_RUNNER, else on for GPUs."""
    v = os.environ.get("KAGENT_SPARE_RUNNER", "")
    if v in ("0", "1"):
        return v == "1"
    return bool(getattr(device, "is_gpu", False))


class Spare:
    """One problem's spare runner and the buffer layout its candidates used."""

    def __init__(self) -> None:
        self.rc: Any = None
        # Slot key -> bytes, as the problem's candidates' runners made them.
        self.layout: Dict[Any, int] = {}
        # Device memory a verification needs free (set by the worker).
        self.need = 0
        self.taken = 0  # spares handed over to a verification
        # Started, and its device step (to_device) not yet sent.
        self._to_device = False

    def record(self, rc: Any) -> None:
        """Remember the buffers a verified candidate's runner was lent."""
        for key, nbytes in rc.layout().items():
            self.layout[key] = max(nbytes, self.layout.get(key, 0))

    def take(self) -> Optional[Any]:
        """The spare, ready (its start and lent buffers answered), or None."""
        rc, self.rc = self.rc, None
        if rc is None:
            return None
        try:
            rc.settle(SPARE_WAIT_S)
        except Exception:  # noqa: BLE001 - a spare that failed is only closed
            rc.close()
            return None
        self.taken += 1
        return rc

    def lent(self) -> int:
        """Bytes of the buffers lent to the spare now (0: none, or no spare)."""
        return sum(self.rc.layout().values()) if self.rc is not None else 0

    def ahead(self, device: Any) -> int:
        """Device memory the next spare's buffers would take on top of a
        verification's need, with their headroom (0 where none would be
        lent: host buffers, no layout yet, or more than the share)."""
        total = self._allowed(device)
        return total + HEADROOM if total else 0

    def start(self, device: Any, in_use: int = 0, on_device: bool = True) -> None:
        """Start the next spare (during a verification). With ``on_device``
        it is sent its device step at once (``to_device``); without, its
        process alone starts, nothing of it on the device until then.
        ``in_use``: bytes of the running verification's need its runner
        already holds (buffers it was lent as a spare)."""
        from .failures import CheckFailure
        from .remote import RunnerClient

        if self.rc is not None or not enabled(device):
            return
        try:
            self.rc = RunnerClient(device, wait=False)
        except (CheckFailure, OSError):
            return
        self._to_device = True
        if on_device:
            self.to_device(device, in_use)

    def to_device(self, device: Any, in_use: int = 0) -> None:
        """Send the started spare its device step without waiting (``settle``
        reads the replies): the layout's buffers, lent where they are device
        buffers and the memory allows, and its device context."""
        rc = self.rc
        if rc is None or not self._to_device:
            return
        self._to_device = False
        lend = self._lendable(device, in_use)
        if lend and not rc.lend_ahead(lend):
            self.drop()
            _trace(f"spare lend_failed {sum(lend.values())}")
            return
        # (On the CPU there is no context to make: the runner says so.)
        if not rc.ask_ahead("context"):
            self.rc = None
            return
        _trace(f"spare lent {sum(lend.values())} of {sum(self.layout.values())}")

    def _allowed(self, device: Any) -> int:
        """Bytes of the layout where it may be lent on ``device`` at all
        (device buffers, within the share), else 0."""
        from . import devbuf

        if not self.layout or not getattr(device, "is_cuda", False) or not devbuf.enabled():
            return 0
        total = sum(self.layout.values())
        if total > lend_share() * int(device.info().get("total_memory") or 0):
            return 0
        return total

    def _lendable(self, device: Any, in_use: int = 0) -> Dict[Any, int]:
        """The layout where it is allowed and fits now: the running
        verification has yet to make its need less what it holds
        (``in_use``), and the buffers come on top with their headroom."""
        total = self._allowed(device)
        if not total:
            return {}
        if device.free_memory() < self.need - in_use + total + HEADROOM:
            return {}
        return dict(self.layout)

    def settle(self) -> None:
        """Wait until the spare has answered everything it was sent; one
        that failed is closed."""
        if self.rc is None:
            return
        try:
            self.rc.settle(SPARE_WAIT_S)
        except Exception:  # noqa: BLE001
            self.drop()

    def drop(self) -> None:
        """Close the spare (its process and buffers)."""
        rc, self.rc = self.rc, None
        if rc is not None:
            rc.close()


def start_spare(problem: Any, cand: Any, on_device: bool = True) -> None:
    """Start the problem's next spare (spare.py) during ``cand``'s
    verification; with ``on_device`` unset only its process, until
    spare_to_device. Nothing for a candidate without a runner or a problem
    without spares."""
    spare, in_use = _spare_of(problem, cand)
    if spare is not None:
        spare.start(problem.device, in_use=in_use, on_device=on_device)


def spare_to_device(problem: Any, cand: Any) -> None:
    """Have the spare started during ``cand``'s verification make its device
    context and take its lent buffers (spare.py), now that nothing is timed."""
    spare, in_use = _spare_of(problem, cand)
    if spare is not None:
        spare.to_device(problem.device, in_use=in_use)


def _spare_of(problem: Any, cand: Any) -> Tuple[Optional["Spare"], int]:
    """The problem's spare (None without one, or for a candidate without a
    runner) and what ``cand``'s runner was lent (as a spare, or since): part
    of the running verification's need, already made."""
    spare, rc = getattr(problem, "spare", None), getattr(cand, "rc", None)
    if spare is None or rc is None:
        return None, 0
    return spare, sum(rc.layout().values())


def _trace(msg: str) -> None:
    """A line on stderr with KAGENT_TRACE=1 (scripts/trace_summary.py)."""
    if os.environ.get("KAGENT_TRACE") == "1":
        import sys

        try:
            sys.stderr.write(f"kagent_harness: trace {msg}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
