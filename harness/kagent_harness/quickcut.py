"""The quick cut: a knob variant that cannot beat the best is not verified further.

A tuner's variant matters only if it runs faster than the best kernel: only
then can it be promoted, or become the kernel the next round's variants are
made from. Verifying and timing a slower one in full costs the same as a
faster one's (on a 6.4 GB problem about 1.4 s, of which the kernel's own work
is a few dozen milliseconds). With ``cutoff_ms`` in a verify request (the
best's time plus the cut's margin), the verification times the candidate
briefly once it is loaded (the static, import, entry and tamper checks
passed), in its own runner, before any other check:

- a few calls on a copy of the first stored draw's inputs (in the buffers
  the candidate's full timing uses later), each behind the L2 flush and the
  spin of a full timing, after a short warm-up;
- each time less the events' own span, as the full timing reads its times
  (``events_span``; on an H200 about 1.3 us, a tenth of a 13 us kernel's);
- ``slower`` where at least ``SHARE`` of them took longer than the cutoff
  (``decide``): the verdict fails with that name and the numbers, and no
  further check runs. Otherwise the verification goes on as without it.

It stops as soon as its outcome is settled: three calls under the cutoff end
it (not slower), five over it with none under end it (slower), and it never
takes more than ``MAX_CALLS``.

A cut is never a pass: the candidate was neither verified nor timed, and
the times are the runner's claims. A candidate that claims a slow time only
cuts itself; one that claims a fast time is verified and timed in full like
any other. A candidate that fails while it is timed gets that failure, as it
would at its first verified call. A candidate run in the judge's own process
(``KAGENT_INPROCESS=1``) is not cut.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional

from . import failures as F
from .failures import CheckFailure

# Timed calls of a quick timing: it settles after at least MIN_CALLS when
# every call so far was over the cutoff, and takes at most MAX_CALLS.
MIN_CALLS = 5
MAX_CALLS = 10
# The share of MAX_CALLS that must be over the cutoff for a cut.
SHARE = 0.8
WARMUP_MS = 5.0


def cutoff_of(req: Any) -> float:
    """A verify request's ``cutoff_ms`` where it is a finite positive
    number, else 0 (no cut)."""
    try:
        v = float(req.get("cutoff_ms") or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return v if 0.0 < v < float("inf") else 0.0


def decide(times: List[float], cutoff_ms: float) -> Optional[bool]:
    """True: slower (cut); False: not slower; None: not settled yet."""
    under = sum(1 for t in times if t <= cutoff_ms)
    allowed = MAX_CALLS - math.ceil(SHARE * MAX_CALLS)
    if under > allowed:
        return False
    if len(times) >= MAX_CALLS or (len(times) >= MIN_CALLS and under == 0):
        return True
    return None


def quick_cut(problem: Any, cand: Any, cutoff_ms: float) -> Optional[List[float]]:
    """Time the loaded candidate briefly against ``cutoff_ms``; raises
    CheckFailure(SLOWER) where it is slower. Returns the times (None: not
    timed, no cutoff or no runner)."""
    rc = getattr(cand, "rc", None)
    if cutoff_ms <= 0 or rc is None:
        return None
    from .screen import timed_calls

    shape = problem.main
    # The slot the candidate's full timing puts its first input set in
    # (remote_timing.py): no device memory beyond what that timing takes.
    args = rc.args(("t", shape.label, 0), list(shape.draws[0].inputs))
    span = events_span(problem.device)
    raw = timed_calls(rc, problem.device, shape.label, args, MAX_CALLS, WARMUP_MS,
                      settled=lambda ts: decide(ts, cutoff_ms + span) is not None)
    times = [t - span for t in raw]
    if decide(times, cutoff_ms):
        over = sum(1 for t in times if t > cutoff_ms)
        med = sorted(times)[len(times) // 2]
        raise CheckFailure(F.SLOWER, f"slower than the best: {over} of {len(times)} quick timed calls took longer "
                           f"than the cutoff of {cutoff_ms:.4g} ms (median {med:.4g} ms); not verified further")
    return times


def events_span(dev: Any) -> float:
    """The events' own span to take from each quick time, as the best's full
    timing took its own from its times (bracket.py): the one the worker
    measured as it loaded the problem, which is at least what a timing
    subtracts, so that a quick time is never longer than the full timing
    would read; 0 without the hold or such a measurement."""
    from .bracket import MAX_MS

    ref = getattr(dev, "reference_bracket_ms", None)
    if not getattr(dev, "holds", False) or ref is None or not 0.0 < ref <= MAX_MS:
        return 0.0
    return float(ref)
