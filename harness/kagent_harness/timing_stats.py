"""The statistics of a timing: percentiles and spread of the timed calls,
the spread of the calls that were on time, the tail check (work left
running after a call's end event), the leak check (device memory the
calls keep), how many host-check batches decide that check, and which timed
calls are rechecked.
Pure functions of numbers; timing.py measures, this module summarises."""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Dict, List, Optional, Set

RECHECK_SAMPLES = 32
# Large outputs: the random sample covers about RECHECK_BYTES of outputs, at
# least RECHECK_MIN calls (plus the last call of each input set).
RECHECK_BYTES = 4 << 30
RECHECK_MIN = 4
# Work left running after a timed call's end event (on another stream): the
# median over the timed calls of the device's busy time after the end event
# may not exceed TAIL_FACTOR * median + TAIL_SLACK_MS.
TAIL_FACTOR = 0.25
TAIL_SLACK_MS = 0.05
# A leak (leak_reason): the device memory that stays held rising between
# the first quarter of the timed calls and the last by at least
# LEAK_MIN_BYTES, by at least LEAK_STEP_BYTES at LEAK_MIN_STEPS calls or
# more (what comes and goes does not stay). The
# input sets are rotated in within the first four calls (at most 4 sets),
# so what a kernel keeps per set, or a runner's mirrors of them, grows the
# held memory before that window on 16 calls or more and at one call of it
# at most on fewer; so does a workspace made once.
LEAK_MIN_BYTES = 256 << 20
LEAK_STEP_BYTES = 1 << 20
LEAK_MIN_STEPS = 2
# The events' own span (timing.py, events_bracket) is subtracted from each
# timed call's event span, down to this floor: the device time of a launch
# of one store (ncu's gpu__time_duration 1.47 us on an H200).
MIN_CALL_MS = 0.001
# Host-check batches per check at most: a batch over its limit is timed once
# more before the kernel fails (settle_host_check).
HOST_ATTEMPTS = 2
_rng = random.SystemRandom()


def _stats(times: List[float]) -> Dict[str, Any]:
    xs = sorted(times)
    n = len(xs)

    def pct(p: float) -> float:
        if n == 1:
            return xs[0]
        pos = p * (n - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / n
    return {
        "median_ms": pct(0.5),
        "p20_ms": pct(0.2),
        "p80_ms": pct(0.8),
        "mean_ms": mean,
        "cv": (math.sqrt(var) / mean) if mean > 0 else 0.0,
        "n": n,
        "times_ms": list(times),
    }


def less_bracket(times: List[float], bracket_ms: float) -> List[float]:
    """Event spans less the events' own span (``bracket_ms``), each at least
    MIN_CALL_MS; unchanged for a bracket of 0 (not measured)."""
    if bracket_ms <= 0:
        return list(times)
    return [max(MIN_CALL_MS, t - bracket_ms) for t in times]


def recheck_samples(out_bytes: int) -> int:
    """How many timed calls are rechecked at random: RECHECK_SAMPLES, fewer
    for large outputs (each rechecked output is compared with the reference,
    and a candidate's crosses to the judge), but at least RECHECK_MIN."""
    if out_bytes <= 0:
        return RECHECK_SAMPLES
    return max(RECHECK_MIN, min(RECHECK_SAMPLES, RECHECK_BYTES // out_bytes))


def _recheck_indices(n: int, k: int, out_bytes: int = 0) -> Set[int]:
    """The timed calls whose outputs are rechecked: a random sample (see
    recheck_samples) plus the last call of each input set."""
    samples = recheck_samples(out_bytes)
    if n <= samples:
        return set(range(n))
    chosen = set(_rng.sample(range(n), samples))
    for j in range(k):
        last = n - 1 - ((n - 1 - j) % k)
        chosen.add(last)
    return chosen


def spread(times: List[float], late: List[bool]) -> Dict[str, float]:
    """Where some calls were late, ``cv_on_time``: the spread of the calls
    that were not (a late call's span holds host time past the end of its
    spin). A diagnostic only: ``cv`` keeps every call, since how late a call
    is lies in the candidate's hands (host work before its launch), and a
    kernel must not narrow its reported spread by making its slow calls late."""
    on_time = [t for t, was_late in zip(times, late) if not was_late]
    if len(late) != len(times) or not 2 <= len(on_time) < len(times):
        return {}
    return {"cv_on_time": _stats(on_time)["cv"]}


def tail_check(tails: List[float], median_ms: float) -> Optional[Dict[str, Any]]:
    """The timed calls' tails (the device's busy time after each call's end
    event) against the median: None without tails."""
    if not tails:
        return None
    tail = sorted(tails)[len(tails) // 2]
    limit = TAIL_FACTOR * median_ms + TAIL_SLACK_MS
    out: Dict[str, Any] = {"tail_ms": tail, "limit_ms": limit, "calls": len(tails), "passed": tail <= limit}
    if tail > limit:
        out["reason"] = (
            f"after the end event of a timed call the device stayed busy for {tail:.4g} ms (median of {len(tails)} "
            f"calls; limit {limit:.4g} ms against a timed median of {median_ms:.4g} ms): the call leaves work "
            f"running outside the timed stream (another stream or a thread); do all of a call's work on the "
            f"current stream")
    return out


def leak_reason(allocated: List[int]) -> str:
    """Why the device memory held after each timed call (``allocated``, in
    call order) shows a leak, or "". What stays held from call i on is the
    least held at i or after; a leak is that rising through the timing, from
    the call after the first quarter (call q of n, q = n // 4) to the first
    of the last quarter (call n - q), by at least LEAK_MIN_BYTES, and by
    LEAK_STEP_BYTES or more at LEAK_MIN_STEPS of those calls or more. A
    kernel that keeps part of what its calls allocate, on every call or
    every few, runs out of memory in use however much the device has. A workspace made once (one rise), memory kept per
    input set (rises within the first four calls), and memory that comes
    and goes (nothing stays) are not leaks."""
    n = len(allocated)
    if n < 8:
        return ""
    q = n // 4
    kept = list(allocated)  # kept[i]: the least held at call i or after
    for i in range(n - 2, -1, -1):
        kept[i] = min(kept[i], kept[i + 1])
    if kept[n - q] - kept[q] < LEAK_MIN_BYTES:
        return ""
    steps = sum(1 for i in range(q + 1, n - q + 1) if kept[i] - kept[i - 1] >= LEAK_STEP_BYTES)
    if steps < LEAK_MIN_STEPS:
        return ""
    mib = float(1 << 20)
    calls = n - 1
    growth = allocated[-1] - allocated[0]
    return (f"the call keeps device memory it allocated: {growth / mib:.0f} MiB more held after {calls} more timed "
            f"calls ({growth / calls / mib:.1f} MiB a call; what stays held rose at {steps} of timed calls "
            f"{q + 2}-{n - q + 1} of {n}); a kernel must release what it allocates, or it runs out of memory in use")


def settle_host_check(burst: Callable[[], Dict[str, Any]], attempts: int = HOST_ATTEMPTS) -> Dict[str, Any]:
    """A host check's verdict from up to ``attempts`` bursts: the first that
    passes, else the last. The host's clock can only read long (a moment the
    judge's process or the machine was busy), while work that escapes the
    timed stream makes every burst long, so a burst over its limit is timed
    again before the kernel fails; ``attempts`` says how many were timed."""
    out: Dict[str, Any] = {}
    for n in range(1, max(1, attempts) + 1):
        out = dict(burst(), attempts=n)
        if out.get("passed"):
            break
    return out
