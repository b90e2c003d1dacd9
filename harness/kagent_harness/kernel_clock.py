"""A timed call's device time from the CUDA profiling interface (opt-in).

Events around a call (timing.py, runner.py) measure from the start event to
the end event: the call's kernels and, besides them, the device front end's
work on the two events and on the launch. On an H200 that added a roughly
constant 1-2 us: event times of 25-45 us kernels were 3-8% above Nsight
Compute's ``gpu__time_duration``. The default device clock subtracts that
cost as the judge measures it (timing.py, events_bracket); with
``KAGENT_TIMING_CLOCK=profiler`` a
timing also records the device timestamps of every kernel, copy and fill
(torch.profiler over CUPTI's activity records, CUDA activities only) while
its timed calls run, and a call's time is the span from the first start to
the last end of its own device work.

Which records are a call's: each timed call is enqueued as a hold (hold.py:
the L2 flush and the spin, Triton kernel ``_hold``), the start event, the
call and the end event; once the call's end is reached, a mark (a hold of
no time) follows it. The records between a hold and the mark after it are
the call's, whatever their stream. The timing keeps its event times, and
says why, unless the profiler ran, every timed call has exactly one hold and
one mark around at least one record (a kernel of the call's own named
``_hold`` breaks that count), and no call's span is longer than its event
span by more than ``SLACK_MS``.

In a runner the spans are the runner's claims, as its event times are: the
judge's bounds (remote_timing.py) apply to them alike. NVIDIA only (holds).
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Tuple

from . import hold

ENV = "KAGENT_TIMING_CLOCK"
PROFILER = "profiler"
HOLD_NAME = "_hold"
# A span may exceed its call's event span by this much (clock rounding).
SLACK_MS = 0.002


def requested() -> bool:
    """Whether this process was asked to time with the profiler's records."""
    return os.environ.get(ENV, "") == PROFILER


def call_spans(records: Sequence[Tuple[int, int, str]], calls: int) -> Tuple[Optional[List[float]], str]:
    """Each timed call's span in ms from device records (start ns, end ns,
    name) of holds, marks and the calls' own work, in any order; (None,
    why) where the records do not fall into ``calls`` hold/mark pairs with
    work between."""
    recs = sorted(records)
    bounds = [i for i, r in enumerate(recs) if r[2] == HOLD_NAME]
    if len(bounds) != 2 * calls:
        return None, f"{len(bounds)} hold kernels recorded for {calls} timed calls (expected {2 * calls})"
    spans: List[float] = []
    for k in range(calls):
        lo, hi = bounds[2 * k], bounds[2 * k + 1]
        own = recs[lo + 1:hi]
        if not own:
            return None, f"timed call {k + 1} has no device work between its hold and its mark"
        start = min(r[0] for r in own)
        end = max(r[1] for r in own)
        if start < recs[lo][1]:
            return None, f"timed call {k + 1} started before its hold ended"
        spans.append((end - start) / 1e6)
    return spans, ""


def checked_spans(spans: Optional[List[float]], event_ms: Sequence[float]) -> Tuple[Optional[List[float]], str]:
    """Spans that may replace the event times: one per call, positive, none
    longer than its event span by more than SLACK_MS."""
    if spans is None:
        return None, "no spans"
    if len(spans) != len(event_ms):
        return None, f"{len(spans)} spans for {len(event_ms)} timed calls"
    for k, (s, e) in enumerate(zip(spans, event_ms)):
        if not s > 0:
            return None, f"timed call {k + 1}: span {s:.6g} ms"
        if s > e + SLACK_MS:
            return None, f"timed call {k + 1}: span {s:.6g} ms longer than its events' {e:.6g} ms"
    return list(spans), ""


class CallClock:
    """The profiler's records over one timing's timed calls."""

    def __init__(self) -> None:
        self._prof: Any = None
        self.calls = 0
        self.error = ""

    def start(self) -> bool:
        """Start recording (after the warm-up). False, with ``error``, where
        it cannot."""
        if not hold.available():
            self.error = "no holds on this device"
            return False
        try:
            from torch.profiler import ProfilerActivity, profile

            prof = profile(activities=[ProfilerActivity.CUDA])
            prof.start()
        except Exception as exc:  # noqa: BLE001 - no CUPTI, a profiler already on: events only
            self.error = f"the profiler did not start: {type(exc).__name__}: {exc}"[:300]
            return False
        self._prof = prof
        return True

    def mark(self) -> None:
        """After a timed call's end (enqueued, not waited for)."""
        if self._prof is None:
            return
        self.calls += 1
        if not hold.hold(0.0, None):
            self.error = "the mark after a timed call could not be enqueued"

    def spans(self, event_ms: Sequence[float]) -> Tuple[Optional[List[float]], str]:
        """Stop recording; the calls' spans to use instead of event_ms, or
        (None, why)."""
        prof, self._prof = self._prof, None
        if prof is None:
            return None, self.error or "not recording"
        try:
            prof.stop()
            records = []
            for ev in prof.profiler.kineto_results.events():
                if str(ev.device_type()).endswith("CUDA") and not ev.is_user_annotation():
                    records.append((int(ev.start_ns()), int(ev.start_ns()) + int(ev.duration_ns()), str(ev.name())))
        except Exception as exc:  # noqa: BLE001
            return None, f"the profiler's records could not be read: {type(exc).__name__}: {exc}"[:300]
        if self.error:
            return None, self.error
        spans, why = call_spans(records, self.calls)
        if spans is None:
            return None, why
        return checked_spans(spans, event_ms)

    def close(self) -> None:
        """Stop recording, discarding the records (a timing that failed)."""
        prof, self._prof = self._prof, None
        if prof is not None:
            try:
                prof.stop()
            except Exception:  # noqa: BLE001
                pass
