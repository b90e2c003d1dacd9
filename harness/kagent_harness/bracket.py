"""The events' own span, subtracted from every timed call's event span.

Two events recorded back to back with nothing between them, after the same
hold and L2 flush as a timed call, span about 1.3 us on an H200, and a timed
call's span holds the same cost (the first launch after the start event, the
end event after the last kernel). The judge measures it in its own process
after the timed calls (``subtracted``): the least span of ``PAIRS`` pairs,
since work of another process can only lengthen a pair, and at most the span
the worker measured as it loaded the problem, before any candidate's process
existed (``measure_reference``), so work a candidate leaves running cannot
enlarge it. Above ``MAX_MS`` nothing is subtracted (the device was not
idle). Only behind the hold (NVIDIA), the set-up it was measured on; ROCm and
xpu keep the spans as measured.

Against Nsight Compute's ``gpu__time_duration`` on an H200
(docs/results/2026-12-04-timing-and-sweep, with the median of the pairs): at
25 us the events alone read 3.8% above ncu, less their span 1.4% below it
(and 3.1-3.5% below ncu's median over three processes, whose own profiles
spread 5%); from 44 us up within 1.2%.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

# Pairs of events recorded with nothing between them, and the longest
# events' own span believed: a longer one means something else ran on the
# device between the pair's events.
PAIRS = 21
MAX_MS = 0.01
# The spin ahead of each pair of the reference measurement.
REFERENCE_SPIN_MS = 0.2


def least_pair(dev: Any, spin_ms: float, flush: Optional[Any]) -> float:
    """The least span (ms) of PAIRS pairs of events recorded with nothing
    between them, each pair after a spin of ``spin_ms`` and the L2 flush, as a
    timed call is."""
    spans = []
    for _ in range(PAIRS):
        dev.spin(spin_ms, flush)
        a, b = dev.event(), dev.event()
        dev.record(a)
        dev.record(b)
        dev.tail_ms(b)
        spans.append(dev.elapsed_ms(a, b))
    return min(spans)


def measure_reference(dev: Any, flush_bytes: int) -> None:
    """Measure the events' own span while no candidate's process exists in
    this worker (the worker calls it as it loads a problem, its runners
    gone) into ``dev.reference_bracket_ms``: every later timing subtracts at
    most this much. Best effort: without a reference a timing's own
    measurement stands alone."""
    import torch

    dev.reference_bracket_ms = None
    if not dev.holds:
        return
    try:
        flush = torch.empty(max(1, flush_bytes // 4), dtype=torch.int32, device=dev.torch_device)
        dev.reference_bracket_ms = least_pair(dev, REFERENCE_SPIN_MS, flush)
        del flush
    except Exception:  # noqa: BLE001 - a diagnostic measurement; timings measure their own
        dev.reference_bracket_ms = None


def subtracted(dev: Any, spin_ms: float, flush: Optional[Any]) -> Tuple[float, str]:
    """The events' own span to subtract from calls timed behind a spin of
    ``spin_ms`` and ``flush``, measured now, and why nothing is subtracted
    where that is worth saying: (0, "") without the hold or a spin (the
    host's launch time would be in the span), (0, reason) above MAX_MS."""
    if not (dev.holds and spin_ms > 0):
        return 0.0, ""
    least = least_pair(dev, spin_ms, flush)
    ref = dev.reference_bracket_ms
    if ref is not None:
        least = min(least, ref)
    if least > MAX_MS:
        return 0.0, (f"the events' own span was not subtracted: two events with nothing between them took at "
                     f"least {least * 1e3:.1f} us (limit {MAX_MS * 1e3:.0f} us)")
    return least, ""
