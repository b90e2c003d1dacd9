"""Screening: many knob variants of one kernel judged briefly, in one runner.

A tuner that searches launch and constexpr settings evaluates hundreds of
variants that differ only in integer literals. Verifying and timing each in
full (verify.py, timing.py) costs seconds a variant, most of it not the
GPU's work: a runner started and a device context made per candidate, each
variant's Triton compile in turn, every check and the full timing budget.
The ``screen`` op ranks a batch instead:

1. every variant passes the static check (the judge, as in verification);
2. one runner imports and builds them all, records one call of each without
   running its kernels and compiles every recorded launch at once on several
   threads (runner.py ``precompile``);
3. per variant (runner.py ``select``): one call on the first stored draw,
   with fresh allocations and free device memory NaN-poisoned as in
   verification, its outputs compared by the judge with that draw's
   reference at the problem's tolerance (unwritten elements fail); then
   ``calls`` timed calls, each behind an L2 flush and a spin as a full
   timing's (the median is the screening time);
4. with ``held_out: "only"``, this step instead, and no screen at the timed
   shape: each variant at each held-out shape (kagent.yaml ``shapes``),
   compiled there, compared with the shape's first draw (a variant wrong
   there fails as ``extra_shapes``) and timed with half as many calls; each
   result has ``shapes`` alone. A tuner screens its walk at the timed shape
   (``held_out: "none"``, the default: each held-out shape would be another
   compile of every launch) and, once its search ends, the variants it
   ranked best over the whole search at the held-out shapes, so that it can
   keep those best across shapes. Full verification checks every shape of
   whatever a tuner picks.

A screening time is a ranking, never a candidate's time: the variants share
one runner, so one could disturb another's calls, and none of the other
checks ran. Whatever a tuner picks from a screen is verified and timed in
full, in its own runner, before it can be promoted. A runner that dies
(crash, tamper, CUDA error) while screening a variant fails that variant; the
rest go on in a fresh runner. A batch whose runner dies while loading is split
in halves until the variant that killed it is alone.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional

from . import failures as F
from .candidate import read_source
from .device import tensors_in
from .failures import CheckFailure
from .loading import Problem, ShapeSet
from .numerics import compare_outputs
from .remote import RunnerClient
from .shm import dtype_name
from .static_check import check_file
from .timing import flush_bytes, spin_for
from .verify import problem_tolerance

# Timed calls per variant and warm-up when the request names none.
DEFAULT_CALLS = 20
DEFAULT_WARMUP_MS = 5.0
# The threads one precompile compiles its variants' launches on when the
# request names none: one per core this process may run on, at most
# MAX_THREADS.
MAX_THREADS = 16
# The request's ``held_out``: the timed shape alone (the default), or the
# held-out shapes alone.
HELD_OUT_NONE = "none"
HELD_OUT_ONLY = "only"


def default_threads() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def held_out_mode(opts: Dict[str, Any]) -> str:
    mode = str(opts.get("held_out") or HELD_OUT_NONE)
    if mode not in (HELD_OUT_NONE, HELD_OUT_ONLY):
        raise ValueError(f"held_out {mode!r} is not one of none, only")
    return mode


def _failed(kind: str, reason: str) -> Dict[str, Any]:
    return {"passed": False, "failure": kind, "reason": reason[:2000]}


class _Batch:
    """One runner screening some of the variants."""

    def __init__(self, problem: Problem, paths: List[str], opts: Dict[str, Any]) -> None:
        self.problem = problem
        self.paths = paths
        self.opts = opts
        self.rc = RunnerClient(problem.device)
        # The timed shape first, then the held-out ones.
        self.shapes = [problem.main] + list(problem.extra)
        self.builds = [self._build(s) for s in self.shapes]
        self.load_s = 0.0
        self.compile_s = 0.0
        self.compiled = 0

    def _build(self, shape: ShapeSet) -> Dict[str, Any]:
        label = shape.label
        return {"label": label, "init": self.rc.args(("init", label), list(shape.init_inputs)),
                "weights": [{"name": n, "t": self.rc.put(("w", label, n), t.detach())}
                            for n, t in shape.model.state_dict().items()]}

    def close(self) -> None:
        self.rc.close()

    def load(self, idx: List[int], held: bool) -> List[Dict[str, Any]]:
        """Precompile the variants ``idx`` at the timed shape, and at the
        held-out ones too where ``held``; their load replies, in order."""
        problem = self.problem
        variants = [{"name": os.path.basename(self.paths[i]), "source": read_source(self.paths[i])} for i in idx]
        n = len(self.shapes) if held else 1
        shapes = [dict(b, args=self._args(s)) for s, b in zip(self.shapes[:n], self.builds[:n])]
        reply = self.rc.request("precompile", dict(shapes[0], **{
            "variants": variants, "shapes": shapes, "entry": str(self.opts.get("entry") or ""),
            "threads": int(self.opts.get("threads") or default_threads()), "tf32": problem.tf32,
            "dtype": dtype_name(problem.dtype) if problem.dtype is not None else ""}),
            what="loading the variants")
        self.load_s += float(reply.get("load_s") or 0.0)
        self.compile_s += float(reply.get("compile_s") or 0.0)
        self.compiled += int(reply.get("compiled") or 0)
        out = list(reply.get("variants") or [])
        return out + [{"error": {"kind": F.CRASH, "message": "no load reply"}}] * (len(idx) - len(out))

    def _args(self, shape: ShapeSet) -> List[Any]:
        # Fresh copies of the shape's first draw for every use: a variant
        # that writes its inputs does not change what the next one reads.
        return self.rc.args(("screen", shape.label), list(shape.draws[0].inputs))

    def _check(self, shape: ShapeSet) -> Any:
        """One call of the selected variant at ``shape``, compared with the
        shape's first draw; the comparison."""
        rc, problem, label, draw = self.rc, self.problem, shape.label, shape.draws[0]
        specs = rc.out_specs(("screen", label), draw.ref)
        rc.poison_outputs(specs)
        # As in verification: fresh allocations and the allocator's free
        # blocks are NaN-poisoned during the call, so an output left partly
        # unwritten cannot pass on what an earlier variant left in the same
        # memory.
        like = [t.numel() * t.element_size() for t in tensors_in(draw.ref)]
        args = self._args(shape)
        reply = rc.request("call", {"label": label, "args": args, "out": specs, "what": "the call",
                                    "poison": True, "like": like}, what="the call")
        out = rc.outputs(reply.get("out"), specs)
        if out is None and problem.allow_inplace and args and isinstance(args[0], dict) and "t" in args[0]:
            # An in-place kernel's None stands for its first input, as the
            # runner wrote it back.
            out = rc.view(args[0]["t"])
        return compare_outputs(out, draw.ref, problem_tolerance(problem))

    def _time(self, shape: ShapeSet, calls: int) -> List[float]:
        """``calls`` timed calls at ``shape``, sorted."""
        warmup = float(self.opts.get("warmup_ms") or DEFAULT_WARMUP_MS)
        return sorted(timed_calls(self.rc, self.problem.device, shape.label, self._args(shape), calls, warmup))

    def calls(self) -> int:
        return max(1, int(self.opts.get("calls") or DEFAULT_CALLS))

    def one(self, k: int) -> Dict[str, Any]:
        """Screen the k-th variant of the last load at the timed shape."""
        main = self.shapes[0]
        self.rc.request("select", dict(self.builds[0], variant=k), what="building the variant")
        cmp = self._check(main)
        if not cmp.ok:
            return _failed(cmp.check, f"draw 1: {cmp.reason}")
        times = self._time(main, self.calls())
        return {"passed": True, "median_ms": times[len(times) // 2], "times_ms": times, "calls": len(times),
                "max_abs_err": cmp.max_abs_err, "rel_l2": cmp.rel_l2}

    def held(self, k: int) -> Dict[str, Any]:
        """The k-th variant of the last load at each held-out shape: a
        failure, or ``{"shapes": [{"label", "median_ms"}]}``."""
        self.rc.request("select", dict(self.builds[0], variant=k), what="building the variant")
        shapes = []
        for shape, build in zip(self.shapes[1:], self.builds[1:]):
            what = f"shape {shape.label}"
            try:
                self.rc.request("build", build, what=f"building the variant for {what}")
                at = self._check(shape)
            except CheckFailure as f:
                if self.rc.closed:
                    raise
                return _failed(F.EXTRA_SHAPES, f"{what}: {f.reason}")
            if not at.ok:
                return _failed(F.EXTRA_SHAPES, f"{what}: {at.reason}")
            t = self._time(shape, max(1, self.calls() // 2))
            shapes.append({"label": shape.label, "median_ms": t[len(t) // 2]})
        return {"shapes": shapes}


def timed_calls(rc: RunnerClient, dev: Any, label: str, args: List[Any], calls: int, warmup_ms: float,
                settled: Optional[Callable[[List[float]], bool]] = None) -> List[float]:
    """Up to ``calls`` timed calls of the runner's callable ``label`` on
    ``args``, each behind an L2 flush and a spin as a full timing's, after a
    warm-up of ``warmup_ms``; in call order. ``settled`` (given the times so
    far) ends them early. The times are the runner's claims."""
    flush = flush_bytes(dev)
    prep = rc.request("prepare", {"label": label, "sets": [args], "flush_bytes": flush, "estimate_calls": 3,
                                  "warmup_ms": warmup_ms}, what="the warm-up")
    spin = spin_for(dev, float(prep.get("host_ms") or 0.0))
    times: List[float] = []
    for _ in range(calls):
        r = rc.request("timed", {"label": label, "args": args, "spin_ms": spin, "flush": bool(flush)},
                       what="a timed call")
        times.append(float(r.get("ms") or 0.0))
        if settled is not None and settled(times):
            break
    return times


def screen(problem: Problem, paths: List[str], opts: Dict[str, Any]) -> Dict[str, Any]:
    """Screen the variants at ``paths`` (see the module's doc); one result
    per path, in order, and where the time went."""
    t0 = time.perf_counter()
    results: List[Optional[Dict[str, Any]]] = [None] * len(paths)
    require = bool(opts.get("require_triton", True))
    for i, path in enumerate(paths):
        st = check_file(path, require, problem.path)
        if not st.passed:
            results[i] = _failed(F.STATIC, st.reason)
    mode = held_out_mode(opts)
    pending = [i for i, r in enumerate(results) if r is None]
    run = _Passes(problem, paths, opts)
    try:
        if mode == HELD_OUT_NONE:
            run.go(pending, results, held=False)
        elif not problem.extra:
            for i in pending:
                results[i] = {"passed": True}  # no held-out shape to fail at
        else:
            run.go(pending, results, held=True)
            for i in pending:
                r = results[i] or _failed(F.CRASH, "no held-out screen")
                results[i] = dict(r, passed=True) if "shapes" in r else r
    finally:
        run.close()
    return {
        "results": results,
        "compiled": run.compiled,
        "phases": dict(run.phases, total_s=time.perf_counter() - t0),
        "method": _method(problem, opts),
    }


class _Passes:
    """The runners of one screen: groups of variants, each screened in one
    runner (kept for the next pass while it lives). A group that fails to
    load (its runner died or was tampered with while importing or recording)
    is split in halves, so one bad variant costs a few runners, not one per
    variant; alone, it fails with the runner's failure."""

    def __init__(self, problem: Problem, paths: List[str], opts: Dict[str, Any]) -> None:
        self.problem, self.paths, self.opts = problem, paths, opts
        self.batch: Optional[_Batch] = None
        self.phases: Dict[str, float] = {"load_s": 0.0, "compile_s": 0.0, "runners": 0}
        self.compiled = 0

    def _runner(self) -> _Batch:
        if self.batch is None or self.batch.rc.closed:
            self.close()
            self.batch = _Batch(self.problem, self.paths, self.opts)
            self.phases["runners"] += 1
        return self.batch

    def close(self) -> None:
        b, self.batch = self.batch, None
        if b is None:
            return
        self.phases["load_s"] += b.load_s
        self.phases["compile_s"] += b.compile_s
        self.compiled += b.compiled
        b.close()

    def go(self, pending: List[int], results: List[Optional[Dict[str, Any]]], held: bool) -> None:
        """Screen the variants ``pending`` (at the held-out shapes where
        ``held``) into ``results``."""
        groups = [list(pending)]
        while groups:
            idx = [i for i in groups.pop(0) if results[i] is None]
            if not idx:
                continue
            try:
                loaded = self._runner().load(idx, held)
            except CheckFailure as f:
                self.close()
                if len(idx) == 1:
                    results[idx[0]] = _failed(f.name, f.reason)
                else:
                    groups[:0] = [idx[:len(idx) // 2], idx[len(idx) // 2:]]
                continue
            batch = self.batch
            assert batch is not None
            for k, i in enumerate(idx):
                err = loaded[k].get("error")
                if err:
                    results[i] = _failed(str(err.get("kind") or F.EXCEPTION), str(err.get("message") or ""))
                    continue
                try:
                    results[i] = batch.held(k) if held else batch.one(k)
                except CheckFailure as f:
                    results[i] = _failed(f.name, f.reason)
                    if batch.rc.closed:
                        # The runner is gone: the rest in a fresh one.
                        self.close()
                        groups.insert(0, idx[k + 1:])
                        break


def _method(problem: Problem, opts: Dict[str, Any]) -> str:
    calls = int(opts.get("calls") or DEFAULT_CALLS)
    mode = held_out_mode(opts)
    if mode == HELD_OUT_ONLY:
        if not problem.extra:
            return "screen at the held-out shapes: the problem has none"
        return (f"screen at {len(problem.extra)} held-out shape(s): draw 1 compared, median of "
                f"{max(1, calls // 2)} calls, all variants in one runner")
    if problem.device.is_gpu:
        return (f"screen: draw 1 compared, median of {calls} calls, each behind an L2 flush and a spin "
                f"(device events), all variants in one runner")
    return f"screen: draw 1 compared, median of {calls} calls (CPU time), all variants in one runner"


def compile_ahead(problem: Problem, paths: List[str], opts: Dict[str, Any]) -> Dict[str, Any]:
    """Compile the kernels of the variants at ``paths`` before any of them
    is verified: one runner imports and builds them all, records one call of
    each at the timed shape without running its kernels and compiles every
    recorded launch at once on several threads (steps 1 and 2 of a screen).
    The compiled kernels land in the Triton cache the runners of this fork
    server share, so each variant's own verification finds its kernels
    compiled instead of compiling them in turn.

    Best effort, and never a verdict: a variant that fails the static check
    or does not load is left for its verification to judge, and a runner that
    dies ends the batch with what it compiled."""
    t0 = time.perf_counter()
    require = bool(opts.get("require_triton", True))
    ok = [p for p in paths if check_file(p, require, problem.path).passed]
    out: Dict[str, Any] = {"variants": len(paths), "loaded": 0, "compiled": 0}
    if ok:
        batch = _Batch(problem, ok, opts)
        try:
            replies = batch.load(list(range(len(ok))), held=False)
            out["loaded"] = sum(1 for r in replies if not r.get("error"))
        except CheckFailure as f:
            out["error"] = f"{f.name}: {f.reason}"[:300]
        finally:
            batch.close()
        out["compiled"] = batch.compiled
        out["phases"] = {"load_s": batch.load_s, "compile_s": batch.compile_s}
    out.setdefault("phases", {})["total_s"] = time.perf_counter() - t0
    return out
