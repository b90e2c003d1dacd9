"""Timing a candidate that runs in its runner, with the judge's clocks as bounds.

The runner times each call the way the judge would (device events around the
call, an L2 flush before it; CPU time on the cpu device) and replies with the
numbers; they are claims. The judge keeps what it needs to bound them with
clocks the runner cannot set:

- cpu: the kernel's accounting of the runner's CPU time (``/proc/PID/stat``,
  all threads) over the timed calls must not exceed the claimed total by more
  than the requests' own handling (``CPU_FACTOR``, ``CPU_PER_CALL_MS``,
  ``CPU_SLACK_MS``, and ``CPU_RECHECK_MS_PER_MIB`` of each rechecked call's
  output, which the runner copies to the judge in its time);
- host check (GPU): a burst of back-to-back calls between two events and one
  synchronisation, whose event time the judge bounds by its own wall clock
  around the request (less the round trip it measured with empty requests);
- consistency (GPU): the claimed per-call median (device time: a spin ahead
  of each call hides the host's launch time) may not be far below the device
  time per call of a burst timed the same way, back to back behind one spin
  (``FORGE_FACTOR * median + FORGE_SLACK_MS``): calls with a flushed L2 are
  never much faster than calls with a warm one. That burst's reported time is
  bounded by the judge's wall clock: its wall time less that of an empty burst
  behind the same spin is the calls' own time.

A disagreement fails the candidate as ``timing_forged``. Outputs of rechecked
and unseen-input calls are copied into the judge's buffers and compared by
the judge; an exception on an unseen input fails the candidate (it is never a
reason to skip the check). What the bounds leave open is listed in PROTOCOL.md.
"""

from __future__ import annotations

import math
import random
from typing import Any, Dict, List, Optional

import torch

from . import failures as F
from .checksum import checksum
from .device import clone_all
from .failures import CheckFailure, describe
from .loading import fresh_inputs
from .numerics import bits_equal, device_violations
from .remote import RemoteCallable, runner_cpu_seconds, wall
from .timing_stats import HOST_ATTEMPTS, settle_host_check

TIMING_FORGED = F.TIMING_FORGED
PING_CALLS = 5
CPU_FACTOR = 1.25
CPU_PER_CALL_MS = 1.0
CPU_SLACK_MS = 60.0
# A rechecked call's output crosses to the judge on the runner's CPU clock:
# this much per MiB (a copy at 2 GiB/s), far below computing it.
CPU_RECHECK_MS_PER_MIB = 0.5
FORGE_FACTOR = 2.0
FORGE_SLACK_MS = 0.05
# Empty bursts timed to learn a burst's cost outside its calls.
EMPTY_BURSTS = 3
# The host check's allowance per call of a burst, on top of timing.py's bound.
HOST_CALL_SLACK_MS = 0.02
# The device-time burst: a spin of this many times the host's enqueue time of
# its calls (at least 1 ms, at most DEVICE_BURST_SPIN_MAX_MS) ahead of them.
DEVICE_BURST_SPIN_FACTOR = 3.0
DEVICE_BURST_SPIN_MAX_MS = 200.0
# An empty burst behind a spin takes at least this share of the spin by the
# judge's clock (the spin's clock rate is calibrated at its fastest).
SPIN_WALL_SHARE = 0.5
_rng = random.SystemRandom()


def make_remote_timer(base: Any, problem: Any, target: Any, sets: Any, flush: Any, guard: Any, params: Any) -> Any:
    """A _Timer (timing.py) for a target that runs in a runner."""

    class RemoteTimer(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__(problem, target, sets, flush, guard, params)
            fn: RemoteCallable = target.fn
            self.fn = fn
            self.rc = fn.rc
            self.label = fn.label
            self.set_args: List[List[Any]] = []
            self.walls: List[float] = []
            self.ping_ms = 0.0
            self.cpu0: Optional[float] = None
            self.forged = ""

        # -- helpers --

        def _put_set(self, j: int, values: Optional[List[Any]] = None) -> List[Any]:
            s = self.sets[j]
            src = values if values is not None else (s.pristine if s.pristine is not None else s.inputs)
            args = self.rc.args(("t", self.label, j), list(src))
            if j < len(self.set_args):
                self.set_args[j] = args
            else:
                self.set_args.append(args)
            return args

        def _ping(self) -> float:
            times = []
            for _ in range(PING_CALLS):
                t0 = wall()
                self.rc.request("ping", {}, what="the runner")
                times.append((wall() - t0) * 1e3)
            return sorted(times)[len(times) // 2]

        # -- the _Timer interface --

        def prepare(self) -> None:
            # What this judge's allocator keeps cached goes back to the
            # device: the runner allocates in another process.
            self.dev.empty_cache()
            for j in range(len(self.sets)):
                self._put_set(j)
            self.ping_ms = self._ping()
            flush_bytes = self.flush.numel() * 4 if self.flush is not None else 0
            from . import kernel_clock

            reply = self.rc.request("prepare", {
                "label": self.label, "sets": self.set_args, "flush_bytes": flush_bytes,
                "estimate_calls": 5, "warmup_ms": self.params.warmup_ms,
                "clock": kernel_clock.PROFILER if kernel_clock.requested() else "",
            }, what=f"{self.target.label}: the call")
            # The runner records its timed calls' device work (kernel_clock.py).
            self.remote_clock = reply.get("clock") == kernel_clock.PROFILER
            if kernel_clock.requested() and not self.remote_clock:
                self.clock_note = str(reply.get("clock_error") or "the runner did not record")[:300]
            self.estimate_ms = max(1e-4, float(reply.get("estimate_ms") or 1e-4))
            self.warmup_calls = int(reply.get("warmup_calls") or 0)
            # The runner's host time per call sizes the spin ahead of its
            # timed calls (a claim: a smaller one only makes its calls late).
            from .timing import spin_for

            self.spin_ms = spin_for(self.dev, _number(reply.get("host_ms") or 0.0))
            self._guard()

        def timed_call(self, i: int, recheck: bool) -> tuple:
            j = i % len(self.sets)
            if self.restore:
                self._put_set(j)
            s = self.sets[j]
            if self.cpu0 is None:
                self.cpu0 = runner_cpu_seconds(self.rc.pid)
            # Every timed request is the same: whether this call is checked
            # is decided here after it returned (its output is then read with
            # "last_out"), so the call cannot behave differently when checked.
            t0 = wall()
            reply = self.rc.request("timed", {"label": self.label, "args": self.set_args[j], "flush": True,
                                              "spin_ms": self.spin_ms, "keep": True},
                                    what=f"{self.target.label}: a timed call")
            t1 = wall()
            self.walls.append((t1 - t0) * 1e3)
            self._add_part("timed_requests", t1 - t0)
            ms = _number(reply.get("ms"))
            self.note_host(_number(reply.get("host_ms")))
            if self.dev.is_cuda:
                self.tails.append(_number(reply.get("tail_ms")))
            # The runner's claim, read from torch's C binding captured before
            # the candidate was imported (Device.allocated_bytes): one that
            # hides a leak only risks running out of memory itself; a false
            # leak rejects itself.
            held = reply.get("allocated")
            if isinstance(held, int) and not isinstance(held, bool) and held >= 0:
                self.allocated.append(held)
            if recheck:
                specs = self.rc.out_specs(("t", self.label), s.ref)
                self.rc.poison_outputs(specs)
                got = self.rc.request("last_out", {"out": specs, "sync_back": self.problem.allow_inplace},
                                      what=f"{self.target.label}: a timed call's output")
                out = self.rc.outputs(got.get("out"), specs)
                if out is None and self.problem.allow_inplace:
                    out = self.rc.view(self.set_args[j][0]["t"]).clone()
                self.violations.append(device_violations(out, s.ref, self.tol))
                self.note_bits(s, out)
                self.checked += 1
                self._add_part("rechecks", wall() - t1)
            return (ms,)

        def _add_part(self, name: str, seconds: float) -> None:
            """Where the timed phase went (``timed_parts``)."""
            self.parts[name] = self.parts.get(name, 0.0) + seconds

        def finish(self, marks: List[tuple]) -> None:
            t0 = wall()
            try:
                self._finish(marks)
            finally:
                self._add_part("inputs_intact", wall() - t0)

        def _finish(self, marks: List[tuple]) -> None:
            self.times = [m[0] for m in marks]
            if getattr(self, "remote_clock", False):
                self.remote_clock = False
                reply = self.rc.request("clock_spans", {}, what=f"{self.target.label}: the timed calls' records")
                spans = reply.get("spans")
                ok = isinstance(spans, list) and all(isinstance(x, (int, float)) for x in spans)
                self.use_spans([float(x) for x in spans] if ok else None, str(reply.get("why") or "no spans")[:300])
            cpu1 = runner_cpu_seconds(self.rc.pid)
            if not self.dev.is_gpu and self.cpu0 is not None and cpu1 is not None and self.times:
                used = (cpu1 - self.cpu0) * 1e3
                claimed = sum(self.times)
                from .timing import _output_bytes

                copies = self.checked * CPU_RECHECK_MS_PER_MIB * _output_bytes(self.problem) / (1 << 20)
                limit = CPU_FACTOR * claimed + CPU_PER_CALL_MS * len(self.times) + CPU_SLACK_MS + copies
                if used > limit:
                    self.forged = (
                        f"the candidate's process used {used:.1f} ms of CPU time for {len(self.times)} timed calls "
                        f"but reported {claimed:.1f} ms (limit {limit:.1f} ms): the times it reports are not the "
                        f"time its calls take")
            if not self.problem.allow_inplace:
                self.rc.request("sync_back", {}, what="reading the inputs back")
                for j, s in enumerate(self.sets):
                    for k, a in enumerate(self.set_args[j]):
                        if "t" in a and not bits_equal(self.rc.view(a["t"]), _tensor_at(s.inputs, k)):
                            raise CheckFailure(
                                F.INPUT_MUTATION,
                                f"{self.target.label}: input {k} changed while timed: a kernel must not modify its "
                                f"inputs (set allow_inplace in kagent.yaml if in-place is the intent)")

        def host_check(self) -> Optional[Dict[str, Any]]:
            if not self.dev.is_gpu:
                return None
            median = sorted(self.times)[len(self.times) // 2] if self.times else self.estimate_ms
            calls = max(3, min(500, int(math.ceil(10.0 / max(median, 1e-3)))))
            out = settle_host_check(lambda: self._host_burst(calls))
            # The device burst's bounds read the judge's clock too: one that
            # fails is timed once more (a forged time fails every time).
            for _ in range(HOST_ATTEMPTS):
                if self.forged:
                    break
                reason = self._device_burst(calls, median)
                if not reason:
                    break
            else:
                self.forged = reason
            return out

        def _host_burst(self, calls: int) -> Dict[str, Any]:
            """One host-check burst of ``calls`` calls, by the judge's clock."""
            # A burst's own cost outside its calls (the round trip, the
            # arguments, the guard's check after candidate code ran), by the
            # judge's clock: the least of empty bursts. The candidate is not
            # called in them; a patch that would slow them only there is
            # reported by the guard's check that ends every burst (tamper).
            # What slows every request alike slows the full burst as much.
            fixed = []
            for _ in range(EMPTY_BURSTS):
                t0 = wall()
                self.rc.request("burst", {"label": self.label, "sets": self.set_args, "calls": 0},
                                what=f"{self.target.label}: the call")
                fixed.append((wall() - t0) * 1e3)
            overhead = max(self.ping_ms, min(fixed))
            t0 = wall()
            reply = self.rc.request("burst", {"label": self.label, "sets": self.set_args, "calls": calls},
                                    what=f"{self.target.label}: the call")
            host_ms = max(0.0, (wall() - t0) * 1e3 - overhead)
            event_ms = _number(reply.get("event_ms"))
            from .timing import HOST_FACTOR, HOST_SLACK_MS

            # Per call, the runner's own Python between launches that a
            # launch-bound kernel's events do not show (seen on an H200:
            # about 14 µs per call of a 4 µs kernel).
            limit = HOST_FACTOR * event_ms + HOST_SLACK_MS + HOST_CALL_SLACK_MS * calls
            out = {"event_ms": event_ms, "host_ms": host_ms, "limit_ms": limit, "calls": calls,
                   "overhead_ms": overhead, "passed": host_ms <= limit, "clock": "judge"}
            if not self.forged and event_ms > host_ms + overhead + 0.05:
                self.forged = (
                    f"the candidate's process reported {event_ms:.4g} ms of device time for calls that took "
                    f"{host_ms:.4g} ms by the judge's clock")
            return out

        def _device_burst(self, calls: int, median: float) -> str:
            """The timed calls' medians are device time (a spin ahead of each
            call hides the host's launch time), so they are held to a burst
            timed the same way: the calls back to back after one spin that
            outlasts their enqueue. Its device time may not be far above the
            median (FORGE_FACTOR), and the judge's clock bounds it from
            below: the burst's wall time less that of an empty burst behind
            the same spin is the calls' own time (device or host, whichever
            is longer), which may not exceed the reported device time by
            more than the host check allows. "" or the reason."""
            if not self.dev.can_spin:
                return ""
            host = max(sorted(self.host_times)[len(self.host_times) // 2] if self.host_times else 0.0, 0.001)
            # As many calls as one spin can cover the enqueue of.
            calls = max(3, min(calls, int((DEVICE_BURST_SPIN_MAX_MS - 0.5) / (DEVICE_BURST_SPIN_FACTOR * host))))
            spin = min(DEVICE_BURST_SPIN_MAX_MS, max(1.0, DEVICE_BURST_SPIN_FACTOR * host * calls + 0.5))
            payload = {"label": self.label, "sets": self.set_args, "spin_ms": spin}
            walls = []
            event_ms = 0.0
            for n in (0, calls, 0):
                t0 = wall()
                reply = self.rc.request("burst", dict(payload, calls=n), what=f"{self.target.label}: the call")
                walls.append((wall() - t0) * 1e3)
                if n:
                    event_ms = _number(reply.get("event_ms"))
            return device_burst_verdict(median, calls, spin, event_ms, walls[1], min(walls[0], walls[2]))

        def _unseen_call(self, times: List[float]) -> str:
            from .timing import UNSEEN_SPIN_MS, _Skip, _spin_available, unseen_verdict

            problem = self.problem
            try:
                with torch.no_grad():
                    inputs = fresh_inputs(problem)
                    before = None if problem.allow_inplace else checksum(inputs)
            except BaseException as exc:  # noqa: BLE001 - the problem's code or memory, not the candidate
                raise _Skip(f"building a new draw failed: {describe(exc)}") from None
            j = _rng.randrange(len(self.sets))
            args = self._put_set(j, inputs)
            specs = self.rc.out_specs(("t", self.label), self.sets[j].ref)
            self.rc.poison_outputs(specs)
            try:
                reply = self.rc.request("timed", {"label": self.label, "args": args, "flush": True, "out": specs,
                                                  "spin_ms": UNSEEN_SPIN_MS if _spin_available(self.dev) else 0.0,
                                                  "sync_back": True},
                                        what="the call on new inputs")
            except CheckFailure as failure:
                if failure.name == "crash":
                    raise
                # Never a reason to skip: a kernel that fails on inputs nobody
                # has seen fails.
                self._put_set(j)
                return f"the call on new inputs failed ({failure.name}): {failure.reason}"
            # What the call left running on other streams is its time too.
            times.append(_number(reply.get("ms")) + _number(reply.get("tail_ms")))
            out = self.rc.outputs(reply.get("out"), specs)
            mutated = before is not None and any(
                "t" in a and not bits_equal(self.rc.view(a["t"]), x) for a, x in zip(args, inputs))
            if out is None and problem.allow_inplace:
                out = self.rc.view(args[0]["t"]).clone()
            self._put_set(j)
            if mutated:
                return ("the call modified its inputs: a kernel must leave them alone (set allow_inplace in "
                        "kagent.yaml if in-place is the intent)")
            try:
                with torch.no_grad():
                    ref = problem.model(*(clone_all(inputs) if problem.main.ref_mutates_inputs else inputs))
            except BaseException as exc:  # noqa: BLE001 - the reference on a new draw
                raise _Skip(f"the reference on a new draw raised {describe(exc)}") from None
            return unseen_verdict(out, ref, self.tol, self.target.precision_bound)

        def method(self) -> str:
            return super().method() + "; run in the candidate's own process, bounded by the judge's clock"

    return RemoteTimer()


def device_burst_verdict(median: float, calls: int, spin_ms: float, event_ms: float, wall_ms: float,
                         empty_wall_ms: float) -> str:
    """The device-time burst's verdict (RemoteTimer._device_burst): ``calls``
    calls behind a spin of ``spin_ms`` reported ``event_ms`` of device time
    and took ``wall_ms`` by the judge's clock; the same request with no calls
    took ``empty_wall_ms``. "" or the reason of a ``timing_forged`` failure.

    - An empty burst that ended well before its spin could have, or a full
      one that ended before the empty one: the runner did not spin (its
      reported times would then be free of the judge's bound below).
    - The burst's device time per call far above the reported median.
    - The burst's own wall time (beyond the empty one's) far above its
      reported device time."""
    from .timing import HOST_FACTOR, HOST_SLACK_MS

    if empty_wall_ms < SPIN_WALL_SHARE * spin_ms or wall_ms < empty_wall_ms - HOST_SLACK_MS:
        return (f"a burst behind a spin of {spin_ms:.3g} ms took {empty_wall_ms:.3g} ms empty and {wall_ms:.3g} ms with "
                f"{calls} calls by the judge's clock: the candidate's process does not time its calls the way the "
                f"harness does")
    per_call = event_ms / calls
    if FORGE_FACTOR * median + FORGE_SLACK_MS < per_call:
        return (f"the timed calls reported a median of {median:.4g} ms, but {calls} calls back to back took "
                f"{per_call:.4g} ms each: the times the candidate's process reports are not the time its "
                f"calls take")
    own = wall_ms - empty_wall_ms
    limit = HOST_FACTOR * event_ms + HOST_SLACK_MS + HOST_CALL_SLACK_MS * calls
    if own > limit:
        return (f"{calls} calls behind a spin took {own:.4g} ms by the judge's clock beyond the spin, but the "
                f"candidate's process reported {event_ms:.4g} ms of device time for them (limit {limit:.4g} ms): "
                f"the times it reports are not the time its calls take")
    return ""


def _number(v: Any) -> float:
    if isinstance(v, (int, float)) and math.isfinite(float(v)) and float(v) >= 0:
        return float(v)
    raise CheckFailure(TIMING_FORGED, f"the candidate's process reported a time that is not a number: {str(v)[:40]}")


def _tensor_at(values: List[Any], k: int) -> Any:
    return values[k] if k < len(values) else None
