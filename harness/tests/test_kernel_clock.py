"""Timed calls' spans from the profiler's device records (kernel_clock.py):
which records are a call's, and when the event times are kept instead."""

from __future__ import annotations

import os
import unittest
from unittest import mock

from kagent_harness import kernel_clock
from kagent_harness.kernel_clock import HOLD_NAME, call_spans, checked_spans
from kagent_harness.timing import _Timer, clock_of


def _records(calls, side=()):
    """Hold, the call's kernels (start, end ns), mark; per call, 10 us apart."""
    recs = []
    t = 0
    for work in calls:
        recs.append((t, t + 300_000, HOLD_NAME))
        t += 300_000
        for s, e in work:
            recs.append((t + s, t + e, "k"))
        end = t + max(e for _, e in work) if work else t
        recs.append((end + 500, end + 2_500, HOLD_NAME))
        t = end + 10_000
    return recs + list(side)


class CallSpansTest(unittest.TestCase):
    def test_spans_from_first_start_to_last_end(self) -> None:
        recs = _records([[(800, 25_800)], [(700, 10_700), (11_500, 40_000)]])
        spans, why = call_spans(list(reversed(recs)), 2)  # any order
        self.assertEqual(why, "")
        self.assertEqual(spans, [0.025, 0.0393])

    def test_hold_count_must_match(self) -> None:
        recs = _records([[(800, 25_800)], [(700, 10_700)]])
        self.assertIsNone(call_spans(recs, 3)[0])
        # The call's own kernel named like the hold splits its call.
        recs = _records([[(800, 5_000), (5_500, 9_000)]])
        renamed = [(s, e, HOLD_NAME if (s, e) == (305_500, 309_000) else n) for s, e, n in recs]
        spans, why = call_spans(renamed, 1)
        self.assertIsNone(spans)
        self.assertIn("3 hold kernels recorded for 1 timed calls", why)

    def test_call_without_work_or_overlapping_its_hold(self) -> None:
        self.assertIn("no device work", call_spans(_records([[]]), 1)[1])
        # A copy on another stream that ran while the hold held the SMs.
        recs = _records([[(800, 25_800)]]) + [(200_000, 400_000, "Memcpy DtoD")]
        self.assertIn("started before its hold ended", call_spans(recs, 1)[1])

    def test_checked_against_the_events(self) -> None:
        self.assertEqual(checked_spans([0.025, 0.030], [0.027, 0.031]), ([0.025, 0.030], ""))
        self.assertIsNone(checked_spans([0.025], [0.027, 0.031])[0])
        self.assertIn("longer than its events", checked_spans([0.040], [0.030])[1])
        self.assertIsNone(checked_spans([0.0], [0.030])[0])
        self.assertIsNone(checked_spans([float("nan")], [0.030])[0])
        self.assertIsNone(checked_spans(None, [0.030])[0])


class TimerClockTest(unittest.TestCase):
    def _timer(self, times):
        t = _Timer.__new__(_Timer)
        t.times, t.event_times, t.clock_note, t.clock = list(times), [], "", None
        t.spin_ms = 0.5
        t.dev = mock.Mock(is_gpu=True)
        return t

    def test_spans_replace_event_times_and_say_so(self) -> None:
        t = self._timer([0.027, 0.028])
        t.use_spans([0.025, 0.026], "")
        self.assertEqual((t.times, t.event_times), ([0.025, 0.026], [0.027, 0.028]))
        self.assertEqual(clock_of(t), "profiler")
        t.events_only("the other side has no spans")
        self.assertEqual((t.times, t.event_times), ([0.027, 0.028], []))
        self.assertEqual(clock_of(t), "device")
        self.assertIn("other side", t.clock_note)

    def test_claims_beyond_the_events_are_refused(self) -> None:
        t = self._timer([0.027, 0.028])
        t.use_spans([0.025, 0.5], "")
        self.assertEqual(t.times, [0.027, 0.028])
        self.assertIn("longer than its events", t.clock_note)
        t.use_spans(None, "the runner was not recording")
        self.assertEqual(t.clock_note, "the runner was not recording")

    def test_requested_only_by_the_variable(self) -> None:
        with mock.patch.dict(os.environ, {"KAGENT_TIMING_CLOCK": "profiler"}):
            self.assertTrue(kernel_clock.requested())
        with mock.patch.dict(os.environ, {"KAGENT_TIMING_CLOCK": "events"}):
            self.assertFalse(kernel_clock.requested())

    def test_no_recording_without_holds(self) -> None:
        clock = kernel_clock.CallClock()
        with mock.patch.object(kernel_clock.hold, "available", lambda: False):
            self.assertFalse(clock.start())
        self.assertEqual(clock.spans([0.1]), (None, "no holds on this device"))


if __name__ == "__main__":
    unittest.main()
