"""What a timing times: the kernel, PyTorch eager or torch.compile
(``make_target``; torch.compile's callable is built once per problem and
its failure kept as ``Unavailable``), and the parameters of a timing
(``BenchParams``, from the worker's request). How the calls are timed is
timing.py."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

import torch

from .candidate import Candidate
from .device import clone_all
from .failures import describe
from .guard import Guard
from .loading import Problem


class Unavailable(Exception):
    """The target cannot be timed here (torch.compile missing or failing)."""


@dataclass
class BenchParams:
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    min_reps: int = 10
    max_reps: int = 1000
    flush_bytes: int = 0  # 0: twice the device's L2 (256 MiB if unknown)
    rotate: bool = True
    recheck: bool = True

    @classmethod
    def from_request(cls, req: Dict[str, Any]) -> "BenchParams":
        p = cls()
        for key in ("warmup_ms", "rep_ms"):
            if req.get(key) is not None:
                setattr(p, key, max(0.0, float(req[key])))
        for key in ("min_reps", "max_reps", "flush_bytes"):
            if req.get(key) is not None:
                setattr(p, key, max(0, int(req[key])))
        for key in ("rotate", "recheck"):
            if req.get(key) is not None:
                setattr(p, key, bool(req[key]))
        p.min_reps = max(1, p.min_reps)
        p.max_reps = max(p.min_reps, p.max_reps)
        return p


@dataclass
class Target:
    label: str  # kernel | eager | compile
    fn: Callable[..., Any]
    is_kernel: bool
    # Checksums of the verified outputs by draw index (kernels verified in
    # this worker, atomics not declared): rechecked timed calls on a stored
    # draw must give the same bits.
    verified: Optional[Dict[int, Any]] = None
    # The precision check's bound on other calls' error (precision.Bound),
    # applied to the unseen draws.
    precision_bound: Any = None


def make_target(problem: Problem, kind: str, cand: Optional[Candidate], guard: Guard) -> Target:
    if kind == "kernel":
        if cand is None:
            raise ValueError("kernel target without a candidate")
        return Target("kernel", cand.callable_for(problem.main), True, cand.verified_sums, cand.precision_bound)
    if kind == "eager":
        return Target("eager", problem.model, False)
    if kind == "compile":
        return Target("compile", _compiled(problem, guard), False)
    raise ValueError(f"unknown target {kind!r} (want kernel, eager or compile)")


def _compiled(problem: Problem, guard: Guard) -> Callable[..., Any]:
    if problem.compiled is not None:
        if isinstance(problem.compiled, Unavailable):
            raise problem.compiled
        return problem.compiled
    if not hasattr(torch, "compile"):
        problem.compiled = Unavailable(f"torch.compile is not available in torch {torch.__version__}")
        raise problem.compiled
    cpu = not problem.device.is_gpu
    try:
        if cpu:
            from . import inductor

            inductor.set_up()
        compiled = torch.compile(problem.model)
        with torch.no_grad():
            for _ in range(3):
                inputs = problem.draws[0].inputs
                compiled(*(clone_all(inputs) if _writes_inputs(problem, False) else inputs))
                del inputs
        problem.device.synchronize()
        if cpu:
            inductor.remember()
    except Exception as exc:  # noqa: BLE001 - compile failures make the baseline unavailable
        problem.compiled = Unavailable(f"torch.compile failed: {describe(exc)}")
        raise problem.compiled from None
    finally:
        # torch.compile is trusted harness code; accept what it changed.
        changed = guard.changed_keys()
        if changed:
            print(f"kagent_harness: torch.compile changed {changed[:5]}; accepted", file=sys.stderr)
            guard.reset()
    problem.compiled = compiled
    return compiled


def _writes_inputs(problem: Problem, is_kernel: bool) -> bool:
    """Whether a target may write to its inputs: in-place kernels (and their
    baselines) with allow_inplace; baselines whose reference modified its
    inputs when the problem was loaded."""
    return problem.allow_inplace or (not is_kernel and problem.main.ref_mutates_inputs)
