"""The verification checks, run in order and stopping at the first failure.

static -> import -> entry -> tamper -> (with a cutoff: the quick cut,
quickcut.py) -> correctness (+ unwritten_output,
input_mutation on every draw) -> determinism -> triton_launch -> extra_shapes
-> caching -> user_test. Failures while calling the candidate are named
``exception``, ``oom`` or ``cuda_error`` (the latter fatal), and a tamper
anywhere is fatal. The same callable is used for every call (and is kept for
timing).

Device memory (see PROTOCOL.md, Memory): besides the problem's stored draws,
verification holds at most the first draw's input copy (the caching check
refills it), the input copy of the call in progress and the outputs of the
main draws (each must still hold its result after the later calls); they are
released as soon as the checks that need them are done.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from . import failures as F
from . import precision
from .checksum import checksum
from .calls import invoke
from .candidate import Candidate, find_entry, import_candidate, read_source
from .device import clone_all, perf_counter, tensors_in
from .failures import CheckFailure
from .guard import Guard
from .launches import LaunchCounter, launch_support
from .loading import Draw, Problem, ShapeSet, apply_tf32, references_intact
from .quickcut import quick_cut
from .numerics import (
    ToleranceFn,
    bits_equal,
    compare_outputs,
    difference_summary,
    first_changed_input,
    tolerance_for,
)
from .static_check import check_source
from .usertest import run_user_test

_rng = random.SystemRandom()
# Elements of the largest input changed for the near-duplicate call: the
# first count, then (while the reference stays within tolerance) the next.
NEAR_ELEMENTS = (4, 64, 1024)


@dataclass
class VerifyOptions:
    require_triton: bool = True
    check_launch: bool = True
    entry: str = ""
    test_timeout_s: float = 300.0
    # A quick timing slower than this stops the verification (quickcut.py);
    # 0: none.
    cutoff_ms: float = 0.0


class Recorder:
    """The list of checks and their outcomes."""

    def __init__(self) -> None:
        self.checks: List[Dict[str, Any]] = []
        self.failure: Optional[CheckFailure] = None
        # Wall seconds from the previous record (or mark) to each check's
        # outcome: where a verification's time goes (PROTOCOL.md, verify).
        self.phases: Dict[str, float] = {}
        self._last = perf_counter()

    def mark(self, name: str) -> None:
        """Close a phase that is not a check (e.g. the first call)."""
        now = perf_counter()
        self.phases[name] = self.phases.get(name, 0.0) + (now - self._last)
        self._last = now

    def ok(self, name: str, reason: str = "") -> None:
        self.mark(name)
        self.checks.append({"name": name, "passed": True, "skipped": False, "reason": reason})

    def skip(self, name: str, reason: str) -> None:
        self.mark(name)
        self.checks.append({"name": name, "passed": True, "skipped": True, "reason": reason})

    def fail(self, failure: CheckFailure) -> None:
        self.mark(failure.name)
        self.failure = failure
        self.checks.append({"name": failure.name, "passed": False, "skipped": False, "reason": failure.reason})


def problem_tolerance(problem: Problem) -> ToleranceFn:
    return lambda dtype: tolerance_for(dtype, problem.atol, problem.rtol)


def load_candidate(
    problem: Problem,
    path: str,
    require_triton: bool,
    entry: str,
    guard: Guard,
    rec: Optional[Recorder] = None,
    spare: bool = True,
) -> Candidate:
    """Static check, import, entry and tamper checks; the candidate's callable
    for the main shape is built here. With a ``rec`` (a verification) and
    ``spare``, the next candidate's spare runner starts once this one is
    imported (spare.start_spare)."""
    base = os.path.basename(path)
    source = read_source(path)
    problem_stem = os.path.splitext(os.path.basename(problem.path))[0]
    static = check_source(source, require_triton, [problem_stem])
    if not static.passed:
        raise CheckFailure(F.STATIC, static.reason)
    if rec is not None:
        rec.ok(F.STATIC, "no banned operations on the kernel's code path")
    before = guard.check()
    if before:
        raise CheckFailure(F.TAMPER, f"the worker was already modified before importing {base}: {before}", True)
    if isolated():
        return _load_isolated(problem, path, source, require_triton, entry, guard, rec, spare)
    module = import_candidate(path)
    changed = guard.check()
    if changed:
        raise CheckFailure(F.TAMPER, f"importing {base} tampered with the harness: {changed}", True)
    if rec is not None:
        rec.ok(F.IMPORT, f"imported {base}")
    cand = Candidate(path, source, module, find_entry(module, path, entry), problem)
    cand.callable_for(problem.main)
    if rec is not None:
        rec.ok(F.ENTRY, f"{cand.entry}")
    changed = guard.check()
    if changed:
        raise CheckFailure(F.TAMPER, f"building the candidate tampered with the harness: {changed}", True)
    if rec is not None:
        rec.ok(F.TAMPER, "harness functions unchanged after import")
    return cand


def isolated() -> bool:
    """Whether candidates run in runner processes (the default) rather than
    in this process (KAGENT_INPROCESS=1, for debugging the harness only)."""
    return os.environ.get("KAGENT_INPROCESS", "") != "1"


def _load_isolated(
    problem: Problem, path: str, source: str, require_triton: bool, entry: str, guard: Guard,
    rec: Optional[Recorder], spare: bool = True,
) -> Any:
    """Import, entry and tamper checks in the candidate's own runner process."""
    from .remote import load_remote

    base = os.path.basename(path)
    cand = load_remote(problem, path, source, entry, require_triton, ahead=rec is not None and spare)
    try:
        if rec is not None:
            rec.ok(F.IMPORT, f"imported {base} in its own process")
        cand.callable_for(problem.main)
        if rec is not None:
            rec.ok(F.ENTRY, f"{cand.entry}")
        changed = guard.check()
        if changed:
            raise CheckFailure(F.TAMPER, f"the worker changed while {base} was loaded elsewhere: {changed}", True)
        if rec is not None:
            rec.ok(F.TAMPER, "harness functions unchanged (the candidate runs in its own process)")
    except BaseException:
        cand.close()
        raise
    return cand


def _result_of(out: Any, work: List[Any], problem: Problem) -> Any:
    """A None result of an in-place kernel stands for its first input."""
    if out is None and problem.allow_inplace and work:
        return work[0]
    return out


class _Run:
    def __init__(self, problem: Problem, cand: Candidate, opts: VerifyOptions, guard: Guard, rec: Recorder) -> None:
        self.problem = problem
        self.cand = cand
        self.opts = opts
        self.guard = guard
        self.rec = rec
        self.device = problem.device
        self.tol = problem_tolerance(problem)
        self.max_abs = 0.0
        self.rel_l2 = 0.0
        self.launches: Optional[int] = None

    def call(self, fn: Any, work: List[Any], like: Any, what: str, counter: Optional[LaunchCounter] = None) -> Any:
        out = invoke(fn, work, self.device, self.guard, poison=True, like=like, counter=counter, what=what)
        return _result_of(out, work, self.problem)

    def stale_of(self, out: Any, draw: Draw, others: Sequence[Draw]) -> Optional[Draw]:
        """Another draw whose reference ``out`` matches (a result cached across
        calls, e.g. keyed by a data pointer the allocator handed out again)."""
        for other in others:
            if other is not draw and compare_outputs(out, other.ref, self.tol).ok:
                return other
        return None

    def stale_failure(self, label: str, out: Any, draw: Draw, others: Sequence[Draw]) -> Optional[CheckFailure]:
        other = self.stale_of(out, draw, others)
        if other is None:
            return None
        return CheckFailure(
            F.CACHING,
            f"{label}: the kernel returned the previous result of draw {other.index + 1} for the inputs of draw "
            f"{draw.index + 1}: results must not be cached across calls (by pointer, shape or id)",
        )

    def check_draw(
        self, fn: Any, draw: Draw, label: str, fail_as: Optional[str] = None, others: Sequence[Draw] = ()
    ) -> Tuple[List[Any], Any, float]:
        """One call on a copy of the draw's inputs; the output and input checks.
        Returns (the copy, the output, its rel L2 error against the reference)."""
        work = clone_all(draw.inputs)
        try:
            out = self.call(fn, work, draw.ref, f"{label}: the call")
        except CheckFailure as f:
            if fail_as and f.name == F.EXCEPTION:
                raise CheckFailure(fail_as, f.reason) from None
            raise
        cmp = compare_outputs(out, draw.ref, self.tol)
        if not cmp.ok:
            stale = self.stale_failure(label, out, draw, others)
            if stale is not None:
                raise stale
            name = cmp.check if fail_as is None or cmp.check == F.UNWRITTEN_OUTPUT else fail_as
            raise CheckFailure(name, f"{label}: {cmp.reason}")
        self.max_abs = max(self.max_abs, cmp.max_abs_err)
        self.rel_l2 = max(self.rel_l2, cmp.rel_l2)
        changed = first_changed_input(work, draw.inputs)
        if changed and not self.problem.allow_inplace:
            raise CheckFailure(
                F.INPUT_MUTATION,
                f"{label}: the call modified {changed} in place; inputs must stay unchanged (write results "
                f"to new tensors, or set allow_inplace in kagent.yaml if in-place is the intent)",
            )
        return work, out, cmp.rel_l2

    def run(self) -> None:
        problem, rec = self.problem, self.rec
        fn = self.cand.callable_for(problem.main)
        draws = problem.draws
        n = len(draws)
        outs: List[Any] = []
        rels: Dict[int, float] = {}  # each draw's error against the fp32 reference (rel L2)
        first_work: List[Any] = []
        for draw in draws:
            work, out, rels[draw.index] = self.check_draw(fn, draw, f"draw {draw.index + 1} of {n}", others=draws)
            # The first call compiles (Triton JIT, autotuning).
            rec.mark("first_draw" if not first_work else "draws")
            if not first_work:
                first_work = work  # the caching check refills these very buffers
            outs.append(out)
            del work, out  # later draws' input copies are not needed any more
        # Every earlier output must still hold its result: a kernel that returns
        # one buffer again and again overwrites what its callers hold. (In a
        # runner, the judge holds snapshots; the runner keeps the outputs alive
        # and reports their addresses.)
        if getattr(fn, "reused_buffer", False):
            raise CheckFailure(
                F.CACHING,
                "a later call returned the same output buffer as an earlier one: the kernel returns the same buffer "
                "from every call (or keeps writing to it); return a new tensor from each call",
            )
        release = getattr(fn, "release", None)
        if release is not None:
            release()
        for i, draw in enumerate(draws):
            if not compare_outputs(outs[i], draw.ref, self.tol).ok:
                raise CheckFailure(
                    F.CACHING,
                    f"the output of draw {draw.index + 1} changed after later calls: the kernel returns the same "
                    f"buffer from every call (or keeps writing to it); return a new tensor from each call",
                )
        # Checksums of what each draw gave: timing holds the rechecked timed
        # calls on these very draws to the same bits (a deterministic kernel
        # gives them; one that computes differently once timed does not).
        self.cand.verified_sums = None
        if not problem.atomics and not problem.allow_inplace:
            try:
                self.cand.verified_sums = {draw.index: checksum(out) for draw, out in zip(draws, outs)}
            except (TypeError, RuntimeError):
                self.cand.verified_sums = None
        tol = self.tol(_first_float_dtype(draws[0].ref))
        rec.ok(
            F.CORRECTNESS,
            f"{n} draws match ({tol.text()}, rel L2 <= {tol.rel_l2:g}); max abs err {self.max_abs:.3g}, "
            f"rel L2 {self.rel_l2:.3g}",
        )
        rec.ok(F.UNWRITTEN_OUTPUT, "every output element written (outputs and free memory NaN-poisoned)")
        # The precision check examines one draw, chosen only now that every
        # output is in; of the others, only the first draw's is compared again.
        examined = _rng.randrange(n)
        first, out_k = outs[0], outs[examined]
        del outs
        self.check_precision(examined, out_k, rels)
        del out_k
        if problem.allow_inplace:
            rec.skip(F.INPUT_MUTATION, "allow_inplace is set")
        else:
            rec.ok(F.INPUT_MUTATION, "inputs unchanged by the call")

        # Determinism, with the launch count of this (post-compile) call.
        can_count, why_not = launch_support()
        counter = LaunchCounter() if can_count else None
        work = clone_all(draws[0].inputs)
        out2 = self.call(fn, work, draws[0].ref, "determinism run: the call", counter=counter)
        del work
        if problem.atomics:
            cmp = compare_outputs(out2, first, self.tol)
            if not cmp.ok:
                stale = self.stale_failure("determinism run", out2, draws[0], draws)
                if stale is not None:
                    raise stale
                raise CheckFailure(
                    F.DETERMINISM,
                    f"two runs on the same inputs differ beyond tolerance: {cmp.reason}",
                )
            rec.ok(F.DETERMINISM, "two runs agree within tolerance (atomics declared)")
        else:
            if not bits_equal(out2, first):
                stale = self.stale_failure("determinism run", out2, draws[0], draws)
                if stale is not None:
                    raise stale
                raise CheckFailure(F.DETERMINISM, _nondeterminism_reason(out2, first))
            rec.ok(F.DETERMINISM, "two runs on the same inputs agree bit for bit")
        del out2, first

        if not self.opts.check_launch:
            rec.skip(F.TRITON_LAUNCH, "not requested")
        elif counter is None:
            rec.skip(F.TRITON_LAUNCH, why_not)
        else:
            self.launches = counter.count
            if counter.count == 0:
                raise CheckFailure(
                    F.TRITON_LAUNCH,
                    "no Triton kernel was launched during the call: the work must be done by a @triton.jit kernel",
                )
            rec.ok(F.TRITON_LAUNCH, f"{counter.count} Triton launch(es) in one call")

        if not problem.extra:
            rec.skip(F.EXTRA_SHAPES, "no extra shapes configured (kagent.yaml shapes)")
        else:
            for shape_set in problem.extra:
                self.check_shape(shape_set)
            rec.ok(F.EXTRA_SHAPES, f"{len(problem.extra)} extra shape set(s) match: " + ", ".join(s.label for s in problem.extra))

        if len(draws) < 2:
            rec.skip(F.CACHING, "needs two draws")
        else:
            note = self.check_caching(fn, first_work)
            del first_work
            rec.ok(F.CACHING, note + "; " + self.check_near_duplicate(fn))

        intact = references_intact(problem)
        if intact:
            raise CheckFailure(F.TAMPER, f"the candidate tampered with the harness: {intact}", True)

        if problem.test_path:
            in_runner = getattr(self.cand, "user_test", None)
            if in_runner is not None:
                ok, reason = in_runner(problem.test_path, problem.path, self.opts.test_timeout_s)
            else:
                ok, reason = run_user_test(problem.test_path, self.cand.path, problem.path, self.opts.test_timeout_s)
            if not ok:
                raise CheckFailure(F.USER_TEST, reason)
            rec.ok(F.USER_TEST, reason)
        else:
            rec.skip(F.USER_TEST, "no test.py")

    def check_precision(self, k: int, out: Any, rels: Dict[int, float]) -> None:
        """Draw k's output (k chosen at random once every draw's output was
        in) against an fp64 reference; the other draws' errors against draw
        k's (precision.py). The bound it sets goes to timing's unseen draws."""
        problem = self.problem
        self.cand.precision_bound = None
        draw = problem.draws[k]
        inputs = clone_all(draw.inputs) if problem.main.ref_mutates_inputs else draw.inputs
        a = precision.assess(problem, inputs, draw.ref, out)
        del inputs
        if a.failure:
            raise CheckFailure(F.PRECISION, f"draw {draw.index + 1}: {a.failure}")
        if not a.applies:
            self.rec.skip(F.PRECISION, a.note)
            return
        bound = precision.consistency(a, draw.index, rels)
        if bound is not None:
            for other in problem.draws:
                rel = rels.get(other.index)
                if rel is not None and bound.violated(rel):
                    raise CheckFailure(F.PRECISION, bound.reason(f"draw {other.index + 1}", rel))
        self.cand.precision_bound = bound
        self.rec.ok(F.PRECISION, f"draw {draw.index + 1}: {a.note}")

    def check_shape(self, shape_set: ShapeSet) -> None:
        label = f"shape {shape_set.label}"
        try:
            fn = self.cand.callable_for(shape_set)
        except CheckFailure as f:
            if f.name == F.ENTRY:
                raise CheckFailure(F.EXTRA_SHAPES, f"{label}: {f.reason}") from None
            raise
        self.check_draw(fn, shape_set.draws[0], label, fail_as=F.EXTRA_SHAPES)

    def check_caching(self, fn: Any, buffers: List[Any]) -> str:
        """Draw 1's input buffers, refilled in place with draw 2, must give draw
        2's result. Returns the note for the caching check."""
        draws = self.problem.draws
        new = draws[1]
        with torch.no_grad():
            for buf, src in zip(tensors_in(buffers), tensors_in(new.inputs)):
                buf.copy_(src)
        out = self.call(fn, buffers, new.ref, "caching run: the call")
        cmp = compare_outputs(out, new.ref, self.tol)
        if not cmp.ok:
            stale = compare_outputs(out, draws[0].ref, self.tol).ok
            if stale:
                why = "returned the previous result when the same input buffers were refilled with new values"
            else:
                why = f"gave a wrong result when the same input buffers were refilled with new values ({cmp.reason})"
            raise CheckFailure(
                F.CACHING, f"the kernel {why}: results must not be cached across calls (by pointer, shape or id)"
            )
        return "refilled input buffers give the new draw's result"

    def check_near_duplicate(self, fn: Any) -> str:
        """Draw 1's inputs with a few elements of the largest input taken from
        draw 2, at positions chosen at random now, must give that input's own
        result: a kernel that recognises inputs by a part of them (shape and
        first values, a sample of positions) and returns a result stored for
        them is wrong here. A kernel must read all of the largest input to tell
        this call from draw 1's, which costs what a memory-bound kernel's call
        costs; one whose call costs more than reading its inputs is left to
        timing's unseen draws. Returns the note for the caching check."""
        problem = self.problem
        base, other = problem.draws[0], problem.draws[1]
        work = clone_all(base.inputs)
        pairs = [(t, s) for t, s in zip(tensors_in(work), tensors_in(other.inputs))
                 if t.numel() > 0 and t.is_contiguous() and s.shape == t.shape and s.dtype == t.dtype]
        if not pairs:
            return "no input to change in part"
        t, s = max(pairs, key=lambda p: p[0].numel())
        # More elements only where a few leave the reference within tolerance
        # (a long reduction of a few changed values); never most of them.
        n, ref = 0, None
        for want in NEAR_ELEMENTS:
            want = min(want, t.numel() // 2 or 1)
            if want <= n:
                break
            at = torch.tensor(_rng.sample(range(t.numel()), want), dtype=torch.long, device=t.device)
            n = want
            with torch.no_grad():
                t.view(-1)[at] = s.reshape(-1)[at]
                try:
                    ref = problem.model(*(clone_all(work) if problem.main.ref_mutates_inputs else work))
                except BaseException as exc:  # noqa: BLE001 - the problem's own code on a changed draw
                    kind, fatal = F.classify(exc)
                    if fatal:
                        raise CheckFailure(kind, f"the reference on changed inputs raised {F.describe(exc)}",
                                           fatal) from None
                    return f"inputs changed in part not tried (the reference raised {F.describe(exc)})"
            if not compare_outputs(ref, base.ref, self.tol).ok:
                break
            ref = None
        if ref is None:
            return f"changing {n} input element(s) left the reference within tolerance, so inputs changed in part were not tried"
        out = self.call(fn, work, ref, "near-duplicate run: the call")
        cmp = compare_outputs(out, ref, self.tol)
        if not cmp.ok:
            if compare_outputs(out, base.ref, self.tol).ok:
                why = (f"returned draw 1's result for draw 1's inputs with {n} element(s) changed: results must be "
                       f"computed from the whole input, not looked up by a part of it (shape, first values, a sample)")
            else:
                why = f"gave a wrong result on draw 1's inputs with {n} element(s) changed ({cmp.reason})"
            raise CheckFailure(F.CACHING, f"the kernel {why}")
        return f"draw 1's inputs with {n} element(s) changed give their own result"


def _first_float_dtype(ref: Any) -> torch.dtype:
    for t in tensors_in(ref):
        if t.is_floating_point():
            return t.dtype
    return torch.float32


def _nondeterminism_reason(a: Any, b: Any) -> str:
    detail = ""
    for x, y in zip(tensors_in(a), tensors_in(b)):
        if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
            detail = "the outputs' shapes or dtypes differ"
            break
        detail = difference_summary(x, y)
        if detail:
            break
    return (
        f"two runs on the same inputs give different results ({detail or 'outputs differ'}): the kernel is "
        f"nondeterministic (a race, an uninitialised read, state kept between calls, or atomics — set "
        f"atomics: true in kagent.yaml if order-dependent atomics are intended)"
    )


def runner_compiles(cand: Any) -> Optional[Dict[str, Any]]:
    """Triton's compiles in a passed candidate's runner (runner.py
    ``compiles``): kernels compiled, kernels found in the cache, seconds. The
    runner's claim, kept as a diagnostic of where verification's time went;
    None for a candidate in this process or a reply that does not parse."""
    rc = getattr(cand, "rc", None)
    if rc is None or rc.closed:
        return None
    try:
        reply = rc.request("compiles", what="reading its compile counts")
        out = {"compiled": int(reply["compiled"]), "cache_hits": int(reply["cache_hits"]),
               "seconds": round(float(reply["seconds"]), 4)}
    except (CheckFailure, KeyError, TypeError, ValueError, OverflowError):
        return None
    if min(out["compiled"], out["cache_hits"]) < 0 or not 0 <= out["seconds"] < 1e6:
        return None
    return out


def verify(
    problem: Problem,
    path: str,
    opts: VerifyOptions,
    guard: Guard,
) -> Tuple[Dict[str, Any], Optional[Candidate]]:
    """Run every check; returns the result and, if it passed, the candidate."""
    rec = Recorder()
    apply_tf32(problem.tf32)
    guard.expect_tf32(problem.tf32)
    cand: Optional[Candidate] = None
    run: Optional[_Run] = None
    compiles: Optional[Dict[str, Any]] = None
    quick: Optional[List[float]] = None
    try:
        # With a cutoff, the next candidate's spare starts its process now
        # and makes its device context (and maps any buffers lent to it)
        # after the quick timing: nothing of it runs on the device while a
        # kernel is timed.
        cut = opts.cutoff_ms > 0
        cand = load_candidate(problem, path, opts.require_triton, opts.entry, guard, rec, spare=not cut)
        if cut:
            from .spare import spare_to_device, start_spare

            start_spare(problem, cand, on_device=False)
            try:
                quick = quick_cut(problem, cand, opts.cutoff_ms)
                if quick is not None:
                    rec.mark("quick_timing")
            finally:
                spare_to_device(problem, cand)
        run = _Run(problem, cand, opts, guard, rec)
        run.run()
        compiles = runner_compiles(cand)
    except CheckFailure as failure:
        rec.fail(failure)
    finally:
        if cand is not None and rec.failure is not None:
            if cand.module is not None:
                sys.modules.pop(cand.module.__name__, None)
            close = getattr(cand, "close", None)
            if close is not None:
                close()
    failure = rec.failure
    result: Dict[str, Any] = {
        "passed": failure is None,
        "checks": rec.checks,
        "failure": failure.name if failure else "",
        "reason": failure.reason if failure else "",
        "fatal": bool(failure.fatal) if failure else False,
        "max_abs_err": run.max_abs if run else None,
        "rel_l2": run.rel_l2 if run else None,
        "launches": run.launches if run else None,
        "tf32": problem.tf32,
        "entry": cand.entry if cand else "",
        "source_sha256": cand.sha256 if cand else "",
        "phases": {k: round(v, 4) for k, v in rec.phases.items()},
    }
    if compiles is not None:
        result["triton_compiles"] = compiles
    if quick:
        result["quick_ms"] = sorted(quick)[len(quick) // 2]
    return result, (cand if failure is None else None)
