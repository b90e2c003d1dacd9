"""Timing candidates and baselines, one method for all of them.

For each target: one call (JIT compile / autotune), an estimate of the per-call
time from 5 calls, a time-based warm-up (``warmup_ms``), then
``n = clamp(rep_ms / estimate, min_reps, max_reps)`` timed calls. On CUDA each
timed call has device events around it and an L2 flush (a write of
``flush_bytes``) before it, outside the events; inputs rotate among up to 4 of
the problem's stored draws themselves (no copies: a verified kernel leaves its
inputs alone, and the stored inputs' checksums are checked after timing), or
among copies of them (bounded by 25% of free memory) where the target may
write to its inputs: with ``allow_inplace``, and for baselines whose reference
modified its inputs at load time. Afterwards:

- recheck: the outputs of up to 32 timed calls (sampled at random, plus the
  last call of each input set) are compared with the reference on the device,
  without synchronizing inside the loop;
- host check: a batch of back-to-back calls is timed both with events and
  with the host clock around a device-wide synchronize. Work that escapes the
  timed stream (side streams, threads) makes the host time exceed the event
  time by more than ``HOST_FACTOR * event + HOST_SLACK_MS``;
- unseen inputs (kernels): ``UNSEEN_DRAWS`` new draws from secret seeds, whose
  reference outputs are computed only after the call, are each called once,
  timed the same way and compared with the reference. A kernel must be right
  on them, and not much slower than on the inputs it was timed on
  (``UNSEEN_FACTOR * median + UNSEEN_SLACK_MS``): a result reused across calls
  (cached by content, address or shape, looked up in a table, or found in the
  harness's memory) or work skipped on calls it guesses are not checked makes
  the timed calls faster than a call on inputs nobody has seen. It is skipped,
  with the reason, when the device lacks the memory for one more draw.

Device-side timing (CUDA, ROCm): a spin kernel (``Device.spin``) is enqueued
after the flush and before each timed call's start event, lasting longer than
the host takes to enqueue the call (``SPIN_FACTOR`` times the host time
measured while estimating, at least ``SPIN_MIN_MS``). The host enqueues the
start event, the call's launches and the end event while the device spins, so
the span between the events holds the call's device work and not the host's
launch overhead (Python, guards, the launch path), however slow the host is.
A call whose enqueue took longer than its spin is counted as ``late_calls``
(the device may have waited for the host inside its span) and lengthens the
spin of the calls after it. Without a spin kernel (xpu, a torch without
``torch.cuda._sleep``) the flush alone is ahead of the start event, and a call
whose host time is not well below its device time is host-bound.

On NVIDIA, behind the hold, the events' own span (about 1.3 us on an H200)
is subtracted from every call's span, for the candidate and the baselines
alike (bracket.py); ``event_median_ms`` keeps the median span as measured,
``bracket_ms`` what was subtracted, and the checks (recheck, host, tail,
unseen inputs, the remote bounds) use the spans as measured.

The host time of each timed call (start event to end event, no synchronize)
is reported as ``host_median_ms``.

On CPU the clock is the worker's CPU time (time.process_time, torch on one
thread): the machine's load does not move it. CPU timings are labelled not
representative.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from . import failures as F
from . import bracket, kernel_clock
from .device import Device, clone_all, nbytes, perf_counter, tensors_in
from .failures import CheckFailure, classify, describe
from .guard import Guard
from .checksum import checksum
from .loading import Problem, apply_tf32, fresh_inputs, inputs_intact
from .numerics import ToleranceFn, compare_outputs, device_violations, tolerance_for
from .targets import BenchParams, Target, Unavailable, _writes_inputs, make_target  # noqa: F401 - timing's API
from .timing_stats import _recheck_indices, _stats, leak_reason, less_bracket, settle_host_check, spread, tail_check

HOST_FACTOR = 1.25
HOST_SLACK_MS = 0.5
HOST_BATCH_MS = 10.0
SET_MEMORY_FRACTION = 0.25
ESTIMATE_CALLS = 5
UNSEEN_DRAWS = 3
UNSEEN_FACTOR = 3.0
UNSEEN_SLACK_MS = {"cpu": 1.0, "gpu": 0.02, "gpu_no_spin": 0.1}
# Free memory an unseen draw needs, in multiples of one draw's inputs plus
# twice its outputs (the candidate's and the reference's).
UNSEEN_MEMORY_FACTOR = 1.5
DEFAULT_FLUSH_BYTES = 256 << 20
# The spin ahead of each timed call: SPIN_FACTOR times the host's enqueue time
# of one call (the slowest of the estimate's calls), between SPIN_MIN_MS and
# SPIN_MAX_MS. Where more than LATE_SHARE of the last LATE_WINDOW calls were
# late, it grows to SPIN_FACTOR times the 90th percentile of their host times
# (one slow call, a page fault or a collection, does not change it).
SPIN_FACTOR = 2.0
SPIN_MIN_MS = 0.03
SPIN_MAX_MS = 20.0
LATE_WINDOW = 20
LATE_SHARE = 0.1
# The spin ahead of an unseen-input call (ms).
UNSEEN_SPIN_MS = 0.5
class _InputSet:
    """Inputs of timed calls: a stored draw itself (``pristine`` is None) or a
    copy of one that ``restore`` refills from the stored draw."""

    def __init__(self, inputs: List[Any], ref: Any, pristine: Optional[List[Any]], index: int = -1) -> None:
        self.inputs = inputs
        self.ref = ref
        self.pristine = pristine
        self.index = index  # the stored draw's

    def restore(self) -> None:
        if self.pristine is None:
            return
        with torch.no_grad():
            for dst, src in zip(tensors_in(self.inputs), tensors_in(self.pristine)):
                dst.copy_(src)


def _sets(problem: Problem, rotate: bool, targets: Sequence[Target]) -> List[_InputSet]:
    """The input sets of a bench or compare: the stored draws themselves, or
    copies of them (bounded by free memory) where a target writes to its inputs."""
    draws = problem.draws
    if not any(_writes_inputs(problem, t.is_kernel) for t in targets):
        k = min(problem.sets, len(draws)) if rotate else 1
        return [_InputSet(d.inputs, d.ref, None, d.index) for d in draws[:k]]
    per = max(1, nbytes(draws[0].inputs))
    k = 1
    if rotate:
        budget = int(SET_MEMORY_FRACTION * problem.device.free_memory())
        k = max(1, min(problem.sets, len(draws), budget // per))
    try:
        return [_InputSet(clone_all(d.inputs), d.ref, d.inputs, d.index) for d in draws[:k]]
    except BaseException as exc:  # noqa: BLE001
        kind, fatal = classify(exc)
        raise CheckFailure(kind if kind != F.EXCEPTION else F.OOM, f"copying inputs for timing: {describe(exc)}", fatal) from None


def _check_stored(problem: Problem, sets: List[_InputSet], targets: Sequence[Target]) -> None:
    """The stored draws timed directly must be unchanged (keyed checksums). A
    change is fatal: the worker's copy of the problem is no longer trustworthy
    and the supervisor restarts the worker, which loads the problem again."""
    used = [d for d, s in zip(problem.draws, sets) if s.pristine is None]
    if not used:
        return
    changed = inputs_intact(used)
    if changed:
        who = " or ".join(t.label for t in targets)
        raise CheckFailure(
            F.INPUT_MUTATION,
            f"{who}: {changed} while timed (timed calls get the problem's stored inputs): a kernel must not "
            f"modify its inputs (set allow_inplace in kagent.yaml if in-place is the intent)",
            True,
        )


def _guarded(problem: Problem, sets: List[_InputSet], targets: Sequence[Target], run: Callable[[], Any]) -> Any:
    """Run a bench or compare; check the stored draws afterwards, also when a
    non-fatal failure ends it early."""
    try:
        result = run()
    except CheckFailure as failure:
        if not failure.fatal:
            _check_stored(problem, sets, targets)
        raise
    _check_stored(problem, sets, targets)
    return result


def flush_bytes(dev: Device, requested: int = 0) -> int:
    """The L2 flush's size: ``requested``, else twice the device's L2
    (DEFAULT_FLUSH_BYTES where it is unknown); 0 where there is no GPU."""
    if not dev.is_gpu:
        return 0
    return requested or (2 * dev.l2_bytes() or DEFAULT_FLUSH_BYTES)


def _flush_buffer(problem: Problem, params: BenchParams) -> Optional[torch.Tensor]:
    size = flush_bytes(problem.device, params.flush_bytes)
    if not size:
        return None
    return torch.empty(max(1, size // 4), dtype=torch.int32, device=problem.device.torch_device)


class _Timer:
    """Times one target on the problem's input sets."""

    def __init__(self, problem: Problem, target: Target, sets: List[_InputSet], flush: Optional[torch.Tensor],
                 guard: Guard, params: BenchParams) -> None:
        self.problem = problem
        self.dev: Device = problem.device
        self.target = target
        self.sets = sets
        self.flush = flush
        self.guard = guard
        self.params = params
        self.restore = problem.allow_inplace
        self.tol: ToleranceFn = lambda dt: tolerance_for(dt, problem.atol, problem.rtol)
        self.times: List[float] = []
        # Host time to enqueue each timed call (start event to end event).
        self.host_times: List[float] = []
        self.violations: List[Any] = []
        self.switched = 0
        self.checked = 0
        self.estimate_ms = 0.0
        self.warmup_calls = 0
        # Wait for each timed call (interleaved with a target in a runner,
        # whose calls must not overlap this process's on the device).
        self.sync_each = False
        self.forged = ""
        # Device-side timing: the spin ahead of each timed call (0: none) and
        # the calls enqueued later than their spin ended.
        self.spin_ms = 0.0
        self.late_calls = 0
        self.late: List[bool] = []  # per timed call, in order
        # Per timed call (GPU): the device's busy time after its end event.
        self.tails: List[float] = []
        # Device memory this process's tensors hold after each timed call
        # (leak_reason); empty off a GPU.
        self.allocated: List[int] = []
        # Wall seconds of this timing's phases (PROTOCOL.md, bench: phases).
        self.phases: Dict[str, float] = {}
        # Parts of the "timed" phase (a runner's timer: its timed requests,
        # the output rechecks, the inputs' check at the end).
        self.parts: Dict[str, float] = {}
        # KAGENT_TIMING_CLOCK=profiler (kernel_clock.py): the recording over
        # the timed calls; once used, the calls' event times (self.times
        # then holds their device spans); or why it was not used.
        self.clock: Optional[kernel_clock.CallClock] = None
        self.event_times: List[float] = []
        self.clock_note = ""
        # The events' own span subtracted from each reported time (0: none),
        # or why it was not.
        self.bracket_ms = 0.0
        self.bracket_note = ""

    def _fail(self, exc: BaseException, what: str) -> CheckFailure:
        kind, fatal = classify(exc)
        if self.dev.is_gpu and kind == F.EXCEPTION and self.dev.health_check():
            kind, fatal = F.CUDA_ERROR, True
        return CheckFailure(kind, f"{self.target.label}: {what} raised {describe(exc)}", fatal)

    def _call(self, inputs: List[Any]) -> Any:
        return self.target.fn(*inputs)

    def _guard(self) -> None:
        if self.target.is_kernel:
            changed = self.guard.check()
            if changed:
                raise CheckFailure(F.TAMPER, f"the candidate tampered with the harness while timed: {changed}", True)

    def prepare(self) -> None:
        """First call, estimate and warm-up."""
        dev = self.dev
        try:
            with torch.no_grad():
                self._call(self.sets[0].inputs)
                dev.synchronize()
                marks = []
                hosts = []
                for i in range(ESTIMATE_CALLS):
                    s = self.sets[i % len(self.sets)]
                    if self.restore:
                        s.restore()
                    if self.flush is not None:
                        self.flush.zero_()
                    a, b = dev.event(), dev.event()
                    t0 = perf_counter()
                    dev.record(a)
                    self._call(s.inputs)
                    dev.record(b)
                    hosts.append((perf_counter() - t0) * 1e3)
                    marks.append((a, b))
                dev.synchronize()
                self.estimate_ms = max(1e-4, sum(dev.elapsed_ms(a, b) for a, b in marks) / len(marks))
                self.spin_ms = spin_for(dev, max(hosts))
                self.warmup_calls = max(1, min(100000, int(math.ceil(self.params.warmup_ms / self.estimate_ms))))
                for i in range(self.warmup_calls):
                    self._call(self.sets[i % len(self.sets)].inputs)
                dev.synchronize()
        except CheckFailure:
            raise
        except BaseException as exc:  # noqa: BLE001
            raise self._fail(exc, "the call") from None
        self._guard()
        self.start_clock()

    def start_clock(self) -> None:
        """Record the timed calls' device work (kernel_clock.py), if asked."""
        if not kernel_clock.requested():
            return
        if not (self.dev.is_cuda and self.spin_ms > 0):
            self.clock_note = "no hold ahead of the timed calls"
            return
        clock = kernel_clock.CallClock()
        if clock.start():
            self.clock = clock
        else:
            self.clock_note = clock.error

    def use_spans(self, spans: Optional[List[float]], why: str) -> None:
        """The calls' device spans in place of their event times (checked
        against them), or why not."""
        spans, bad = kernel_clock.checked_spans(spans, self.times) if spans is not None else (None, why)
        if spans is None:
            self.clock_note = bad or why
            return
        self.event_times, self.times = self.times, spans

    def events_only(self, why: str) -> None:
        """Back to the event times (the other side of a comparison has no spans)."""
        if self.event_times:
            self.times, self.event_times = self.event_times, []
            self.clock_note = why

    def events_bracket(self, spin_ms: Optional[float] = None) -> float:
        """The events' own span to subtract from this timer's calls
        (bracket.subtracted), measured behind a spin of ``spin_ms`` (default:
        this timer's) and the L2 flush; 0, with ``bracket_note`` saying why
        where there is one, when nothing is subtracted. The profiler's spans
        in place of the events have no such span."""
        if self.event_times:
            return 0.0
        ms, self.bracket_note = bracket.subtracted(self.dev, self.spin_ms if spin_ms is None else spin_ms, self.flush)
        return ms

    def drop_clock(self) -> None:
        if self.clock is not None:
            self.clock.close()
            self.clock = None

    def timed_call(self, i: int, recheck: bool) -> tuple:
        """Enqueue one timed call; returns its (start, end) events."""
        dev = self.dev
        s = self.sets[i % len(self.sets)]
        if self.restore:
            s.restore()
        dev.spin(self.spin_ms, self.flush)
        a, b = dev.event(), dev.event()
        t0 = perf_counter()
        dev.record(a)
        out = self._call(s.inputs)
        dev.record(b)
        self.note_host((perf_counter() - t0) * 1e3)
        if dev.is_cuda:
            # Each call alone on the device: the next spin starts on an idle
            # device, and what the call left running shows as its tail.
            self.tails.append(dev.tail_ms(b))
            if self.clock is not None:
                self.clock.mark()
        elif self.sync_each:
            dev.synchronize()
        held = dev.allocated_bytes()
        if held is not None:
            self.allocated.append(held)
        if recheck:
            if out is None and self.problem.allow_inplace:
                out = s.inputs[0]
            self.violations.append(device_violations(out, s.ref, self.tol))
            self.note_bits(s, out)
            self.checked += 1
        return a, b

    def note_host(self, host_ms: float) -> None:
        """A timed call's host enqueue time: late when it outlasted the spin
        ahead of it (the spin of later calls grows)."""
        self.host_times.append(host_ms)
        late = self.spin_ms > 0 and host_ms > self.spin_ms
        self.late.append(late)
        if late:
            self.late_calls += 1
            recent = self.host_times[-LATE_WINDOW:]
            late = sum(1 for h in recent if h > self.spin_ms)
            if len(recent) >= LATE_WINDOW // 2 and late > LATE_SHARE * len(recent):
                p90 = sorted(recent)[min(len(recent) - 1, int(0.9 * len(recent)))]
                self.spin_ms = min(SPIN_MAX_MS, max(self.spin_ms, SPIN_FACTOR * p90))

    def finish(self, marks: List[tuple]) -> None:
        self.dev.synchronize()
        self.times = [self.dev.elapsed_ms(a, b) for a, b in marks]
        if self.clock is not None:
            clock, self.clock = self.clock, None
            self.use_spans(*clock.spans(self.times))

    def note_bits(self, s: "_InputSet", out: Any) -> None:
        """A rechecked timed output against the verified one of its draw."""
        sums = self.target.verified
        if not sums or s.index not in sums or out is None:
            return
        try:
            same = checksum(out) == sums[s.index]
        except (TypeError, RuntimeError):
            return
        if not same:
            self.switched += 1

    def recheck_result(self) -> Optional[Dict[str, Any]]:
        if not (self.target.is_kernel and self.params.recheck):
            return None
        if self.switched:
            return {
                "passed": False,
                "checked": self.checked,
                "reason": f"{self.switched} of {self.checked} rechecked timed calls returned outputs that differ, bit "
                f"for bit, from the verified output on the same inputs: the kernel computes differently once timed "
                f"(set atomics: true in kagent.yaml if its results legitimately vary from call to call)",
            }
        bad_calls = sum(1 for v in self.violations if int(v) > 0)
        if bad_calls:
            return {
                "passed": False,
                "checked": self.checked,
                "reason": f"{bad_calls} of {self.checked} rechecked timed calls returned outputs that do not match "
                f"the reference: the result changes between calls (caching, call counting or skipped work)",
            }
        return {"passed": True, "checked": self.checked, "reason": f"{self.checked} timed outputs match the reference"}

    def host_check(self) -> Optional[Dict[str, Any]]:
        """Event time vs host time around a device-wide synchronize."""
        dev = self.dev
        if not dev.is_gpu:
            return None
        median = sorted(self.times)[len(self.times) // 2] if self.times else self.estimate_ms
        calls = max(3, min(500, int(math.ceil(HOST_BATCH_MS / max(median, 1e-3)))))
        return settle_host_check(lambda: self._host_burst(calls))

    def _host_burst(self, calls: int) -> Dict[str, Any]:
        dev = self.dev
        try:
            with torch.no_grad():
                dev.synchronize()
                a, b = dev.event(), dev.event()
                t0 = perf_counter()
                dev.record(a)
                for j in range(calls):
                    self._call(self.sets[j % len(self.sets)].inputs)
                dev.record(b)
                dev.synchronize()
                t1 = perf_counter()
        except BaseException as exc:  # noqa: BLE001
            raise self._fail(exc, "the call") from None
        event_ms = dev.elapsed_ms(a, b)
        host_ms = (t1 - t0) * 1e3
        limit = HOST_FACTOR * event_ms + HOST_SLACK_MS
        return {
            "event_ms": event_ms,
            "host_ms": host_ms,
            "limit_ms": limit,
            "calls": calls,
            "passed": host_ms <= limit,
        }

    def unseen_check(self) -> Optional[Dict[str, Any]]:
        """Calls on new draws (see the module doc). None for baselines."""
        if not (self.target.is_kernel and self.params.recheck):
            return None
        problem, dev = self.problem, self.dev
        first = problem.draws[0]
        need = UNSEEN_MEMORY_FACTOR * (nbytes(first.inputs) * (2 if problem.allow_inplace else 1) + 2 * nbytes(first.ref))
        if dev.is_gpu and dev.free_memory() < need:
            return {"passed": True, "skipped": f"needs {need / 2**30:.1f} GiB of free device memory"}
        median = sorted(self.times)[len(self.times) // 2] if self.times else self.estimate_ms
        times: List[float] = []
        for k in range(UNSEEN_DRAWS):
            try:
                bad = self._unseen_call(times)
            except _Skip as skip:
                dev.empty_cache()
                return {"passed": True, "skipped": str(skip), "times_ms": times}
            if bad:
                return {"passed": False, "times_ms": times, "median_ms": median,
                        "reason": f"new inputs (draw {k + 1} of {UNSEEN_DRAWS} from a secret seed): {bad}"}
        best = min(times)
        slack = UNSEEN_SLACK_MS["cpu"]
        if dev.is_gpu:
            slack = UNSEEN_SLACK_MS["gpu" if _spin_available(dev) else "gpu_no_spin"]
        limit = UNSEEN_FACTOR * median + slack
        out = {"passed": best <= limit, "times_ms": times, "median_ms": median, "limit_ms": limit}
        if best > limit:
            out["reason"] = (
                f"on {UNSEEN_DRAWS} new input draws (secret seeds, reference not yet computed) the fastest call took "
                f"{best:.4g} ms, against a median of {median:.4g} ms on the timed inputs (limit {limit:.4g} ms): "
                f"the timed calls reuse results (cached by content, address or shape, or looked up) or skip work "
                f"on calls they guess are unchecked: compute every call's result from that call's inputs")
        return out

    def _unseen_call(self, times: List[float]) -> str:
        """One timed call on a new draw, then its check; a failure's reason or ""."""
        problem, dev = self.problem, self.dev
        try:
            with torch.no_grad():
                inputs = fresh_inputs(problem)
                pristine = clone_all(inputs) if problem.allow_inplace else None
                before = None if problem.allow_inplace else checksum(inputs)
        except BaseException as exc:  # noqa: BLE001 - the problem's code or memory, not the candidate
            raise _Skip(f"building a new draw failed: {describe(exc)}") from None
        try:
            with torch.no_grad():
                dev.synchronize()
                dev.spin(UNSEEN_SPIN_MS if _spin_available(dev) else 0.0, self.flush)
                a, b = dev.event(), dev.event()
                dev.record(a)
                out = self._call(inputs)
                dev.record(b)
                # What the call left running on other streams is its time too.
                tail = dev.tail_ms(b)
                dev.synchronize()
                times.append(dev.elapsed_ms(a, b) + tail)
        except CheckFailure:
            raise
        except BaseException as exc:  # noqa: BLE001
            if classify(exc)[0] == F.OOM:
                raise _Skip(f"out of device memory: {describe(exc)}") from None
            raise self._fail(exc, "the call on new inputs") from None
        if before is not None and checksum(inputs) != before:
            return ("the call modified its inputs: a kernel must leave them alone (set allow_inplace in kagent.yaml "
                    "if in-place is the intent)")
        if out is None and problem.allow_inplace:
            out = inputs[0]
        src = pristine if pristine is not None else inputs
        try:
            with torch.no_grad():
                ref = problem.model(*(clone_all(src) if problem.main.ref_mutates_inputs else src))
        except BaseException as exc:  # noqa: BLE001 - the reference on a new draw
            kind, fatal = classify(exc)
            if fatal:
                raise CheckFailure(kind, f"the reference on new inputs raised {describe(exc)}", fatal) from None
            raise _Skip(f"the reference on a new draw raised {describe(exc)}") from None
        del inputs, pristine, src
        return unseen_verdict(out, ref, self.tol, self.target.precision_bound)

    def method(self) -> str:
        copies = "copies" if any(s.pristine is not None for s in self.sets) else "the stored draws"
        sets = f"{len(self.sets)} input set(s) rotated ({copies})"
        warm = f"{self.warmup_calls} warm-up calls (~{self.params.warmup_ms:g} ms)"
        if self.dev.is_gpu:
            flush = self.flush.numel() * 4 / (1 << 20) if self.flush is not None else 0
            if self.spin_ms > 0:
                what = "a hold on every SM" if self.dev.holds else "a one-thread spin"
                ahead = (f"device-side: {what} of {self.spin_ms * 1e3:.0f} us ahead of each call's start event "
                         f"(host launch time outside the span; {self.late_calls} of {len(self.host_times)} calls "
                         f"enqueued after their spin ended)")
            else:
                ahead = "no spin ahead of the start event (host launch time may be inside the span)"
            clock = f"{self.dev.type} events around each call"
            if self.bracket_ms > 0:
                clock += (f", less the events' own span ({self.bracket_ms * 1e3:.2f} us: two events with nothing "
                          f"between them after the same hold, the least of {bracket.PAIRS}, in the judge's process)")
            elif self.bracket_note:
                clock += f" ({self.bracket_note})"
            if self.event_times:
                clock = ("device timestamps of each call's own kernels, copies and fills, first start to last end "
                         "(CUDA profiling interface; the events' span checked against them)")
            elif self.clock_note:
                clock += f" (the profiler's records were not used: {self.clock_note})"
            return f"{clock}, {ahead}, L2 flush {flush:.0f} MiB before each, {sets}, {warm}"
        return f"process CPU time (time.process_time) around each call, torch on one thread (cpu: not representative), {sets}, {warm}"


def unseen_verdict(out: Any, ref: Any, tol: ToleranceFn, bound: Any) -> str:
    """An unseen draw's output against its reference (one comparison): the
    tolerances, then the precision check's bound (precision.Bound, None:
    none). A failure's reason or ""."""
    cmp = compare_outputs(out, ref, tol)
    if not cmp.ok:
        return (f"results differ from the reference beyond the tolerance, although the verified draws matched "
                f"({cmp.reason}): a result tied to inputs seen before, or a kernel at the edge of the tolerance; "
                f"compute every result from the call's own inputs, accurately enough for the tolerance")
    if bound is not None and bound.violated(cmp.rel_l2):
        return F.PRECISION + ": " + bound.reason("a new draw", cmp.rel_l2)
    return ""


class _Skip(Exception):
    """The unseen-input check cannot run here (memory, the problem's own code)."""


def _spin_available(dev: Device) -> bool:
    return dev.can_spin


def spin_for(dev: Device, host_ms: float) -> float:
    """The spin ahead of each timed call for a call the host enqueues in
    ``host_ms`` (0 where the device cannot spin)."""
    if not dev.can_spin:
        return 0.0
    return min(SPIN_MAX_MS, max(SPIN_MIN_MS, SPIN_FACTOR * host_ms))


def clock_of(timer: "_Timer") -> str:
    """What timed the numbers, in one word: ``profiler`` (each call's own
    device work, from the profiler's records), ``device`` (events after a
    spin, less the events' own span: the host's launch time is not in
    them), ``events`` (events without
    a spin) or ``cpu`` (the process's CPU time)."""
    if not timer.dev.is_gpu:
        return "cpu"
    if timer.event_times:
        return "profiler"
    return "device" if timer.spin_ms > 0 else "events"


def _output_bytes(problem: Problem) -> int:
    return nbytes(problem.draws[0].ref)


def _report(timer: _Timer) -> Dict[str, Any]:
    times = less_bracket(timer.times, timer.bracket_ms)
    out = _stats(times)
    if timer.bracket_ms > 0:
        out["bracket_ms"] = timer.bracket_ms
        out["event_median_ms"] = _stats(timer.times)["median_ms"]
    out.update(
        {
            "target": timer.target.label,
            "method": timer.method(),
            "representative": timer.dev.is_gpu,
            "estimate_ms": timer.estimate_ms,
            "warmup_calls": timer.warmup_calls,
            "sets": len(timer.sets),
            "host_median_ms": _stats(timer.host_times)["median_ms"] if timer.host_times else 0.0,
            "clock": clock_of(timer),
            "spin_ms": timer.spin_ms,
            "late_calls": timer.late_calls,
            "hold": timer.dev.holds and timer.spin_ms > 0,
        }
    )
    if timer.tails:
        out["tail_ms"] = _stats(timer.tails)["median_ms"]
    out.update(spread(times, timer.late))
    return out


def _conclude(timer: _Timer, stats: Dict[str, Any]) -> None:
    """Recheck and host check. A kernel caught by either gets ``failure`` and
    ``reason`` in its stats (the timing must not be used)."""
    recheck = timer.recheck_result()
    stats["recheck"] = recheck
    median = stats.get("event_median_ms", stats["median_ms"])  # as measured, as the other checks use
    tail = tail_check(timer.tails, median) if timer.target.is_kernel else None
    if tail is not None:
        stats["tail_check"] = tail
    t0 = perf_counter()
    host = timer.host_check()
    t1 = perf_counter()
    stats["host_check"] = host
    unseen = timer.unseen_check() if recheck is None or recheck["passed"] else None
    t2 = perf_counter()
    stats["unseen_inputs"] = unseen
    timer.phases["host_check"] = t1 - t0
    if unseen is not None:
        timer.phases["unseen_inputs"] = t2 - t1
    stats["phases"] = {k: round(v, 4) for k, v in timer.phases.items()}
    if timer.parts:
        stats["timed_parts"] = {k: round(v, 4) for k, v in timer.parts.items()}
    timer._guard()
    stats["failure"] = ""
    stats["reason"] = ""
    if not timer.target.is_kernel:
        return
    leak = leak_reason(timer.allocated)
    if timer.forged:
        stats["failure"] = F.TIMING_FORGED
        stats["reason"] = timer.forged
    elif leak:
        stats["failure"] = F.MEMORY_LEAK
        stats["reason"] = leak
    elif recheck is not None and not recheck["passed"]:
        stats["failure"] = F.RECHECK
        stats["reason"] = recheck["reason"]
    elif tail is not None and not tail["passed"]:
        stats["failure"] = F.HOST_CHECK
        stats["reason"] = tail["reason"]
    elif unseen is not None and not unseen["passed"]:
        stats["failure"] = F.UNSEEN_INPUTS
        stats["reason"] = unseen["reason"]
    elif host is not None and not host["passed"]:
        stats["failure"] = F.HOST_CHECK
        stats["reason"] = (
            f"host time {host['host_ms']:.3f} ms for {host['calls']} calls exceeds the device-event time "
            f"{host['event_ms']:.3f} ms (limit {host['limit_ms']:.3f} ms): work is escaping the timed stream "
            f"(side streams, threads or deferred work)"
        )


def _timer(problem: Problem, target: Target, sets: List[_InputSet], flush: Optional[torch.Tensor], guard: Guard,
           params: BenchParams) -> _Timer:
    """The timer of a target: in this process, or in the candidate's runner
    (remote_timing.py) with the judge's clocks as bounds."""
    from .remote import RemoteCallable

    if isinstance(target.fn, RemoteCallable):
        from .remote_timing import make_remote_timer

        return make_remote_timer(_Timer, problem, target, sets, flush, guard, params)
    return _Timer(problem, target, sets, flush, guard, params)


def bench(problem: Problem, target: Target, params: BenchParams, guard: Guard) -> Dict[str, Any]:
    apply_tf32(problem.tf32)
    guard.expect_tf32(problem.tf32)
    sets = _sets(problem, params.rotate, [target])
    return _guarded(problem, sets, [target], lambda: _bench(problem, target, sets, params, guard))


def _bench(problem: Problem, target: Target, sets: List[_InputSet], params: BenchParams, guard: Guard) -> Dict[str, Any]:
    flush = _flush_buffer(problem, params)
    timer = _timer(problem, target, sets, flush, guard, params)
    t0 = perf_counter()
    timer.prepare()
    t1 = perf_counter()
    n = max(params.min_reps, min(params.max_reps, int(math.ceil(params.rep_ms / timer.estimate_ms))))
    rechecked = _recheck_indices(n, len(sets), _output_bytes(problem)) if (target.is_kernel and params.recheck) else set()
    marks = []
    try:
        with torch.no_grad():
            for i in range(n):
                marks.append(timer.timed_call(i, i in rechecked))
            timer.finish(marks)
    except CheckFailure:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise timer._fail(exc, "a timed call") from None
    finally:
        timer.drop_clock()
    timer.bracket_ms = timer.events_bracket()
    timer.phases.update(prepare=t1 - t0, timed=perf_counter() - t1)
    stats = _report(timer)
    _conclude(timer, stats)
    return stats


def compare(problem: Problem, ta: Target, tb: Target, params: BenchParams, guard: Guard) -> Dict[str, Any]:
    """Time two targets interleaved (A B A B ...) on the same inputs."""
    apply_tf32(problem.tf32)
    guard.expect_tf32(problem.tf32)
    sets = _sets(problem, params.rotate, [ta, tb])
    return _guarded(problem, sets, [ta, tb], lambda: _compare(problem, ta, tb, sets, params, guard))


def _compare(problem: Problem, ta: Target, tb: Target, sets: List[_InputSet], params: BenchParams,
             guard: Guard) -> Dict[str, Any]:
    flush = _flush_buffer(problem, params)
    a = _timer(problem, ta, sets, flush, guard, params)
    b = _timer(problem, tb, sets, flush, guard, params)
    a.sync_each = b.sync_each = type(a) is not type(b)
    t0 = perf_counter()
    a.prepare()
    t1 = perf_counter()
    b.prepare()
    t2 = perf_counter()
    n = max(params.min_reps, min(params.max_reps, int(math.ceil(params.rep_ms / (a.estimate_ms + b.estimate_ms)))))
    out_bytes = _output_bytes(problem)
    ra = _recheck_indices(n, len(sets), out_bytes) if (ta.is_kernel and params.recheck) else set()
    rb = _recheck_indices(n, len(sets), out_bytes) if (tb.is_kernel and params.recheck) else set()
    marks_a: List[tuple] = []
    marks_b: List[tuple] = []
    current = a
    try:
        with torch.no_grad():
            for i in range(n):
                current = a
                marks_a.append(a.timed_call(i, i in ra))
                current = b
                marks_b.append(b.timed_call(i, i in rb))
            a.finish(marks_a)
            b.finish(marks_b)
    except CheckFailure:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise current._fail(exc, "a timed call") from None
    finally:
        a.drop_clock()
        b.drop_clock()
    # Both sides on one clock: spans on one side only would favour it by
    # the events' own overhead.
    for one, other in ((a, b), (b, a)):
        if one.event_times and not other.event_times:
            one.events_only(f"the other side of the comparison has event times only ({other.clock_note or 'no spans'})")
    # One bracket for both sides, measured behind the longer of their spins.
    if clock_of(a) == clock_of(b) == "device":
        a.bracket_ms = b.bracket_ms = a.events_bracket(max(a.spin_ms, b.spin_ms))
        b.bracket_note = a.bracket_note
    both = perf_counter() - t2
    a.phases.update(prepare=t1 - t0, timed=both)
    b.phases.update(prepare=t2 - t1, timed=both)
    sa = _report(a)
    sb = _report(b)
    _conclude(a, sa)
    _conclude(b, sb)
    failure, reason = "", ""
    for side, stats in (("a", sa), ("b", sb)):
        if stats["failure"] and not failure:
            failure, reason = stats["failure"], f"{side} ({stats['target']}): {stats['reason']}"
    return {
        "a": sa,
        "b": sb,
        "b_over_a": (sb["median_ms"] / sa["median_ms"]) if sa["median_ms"] > 0 else None,
        "failure": failure,
        "reason": reason,
    }
