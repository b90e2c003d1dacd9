"""The precision check: lower-precision arithmetic in an fp32 problem.

With TF32 forbidden, an fp32 problem's kernel must compute in fp32. A kernel
that rounds its operands to fewer mantissa bits (TF32 tensor-core dots, which
``tl.dot`` uses on fp32 operands unless told ``input_precision="ieee"``; fp16
or bf16 arithmetic) can still pass the element tolerance, on long reductions
or on all-positive inputs.

The error's size alone does not tell such a kernel apart: on a long
all-positive reduction, rounding the operands to TF32 moves the result by less
than a legitimate fp32 kernel's own accumulation order can (an H200 matvec
with K = 32768 summed 16 columns at a time is off by 6e-7 against fp64; TF32
operands by 1.8e-6). What tells it apart is the error's pattern. On draw 1,
the reference is run in fp64 on the exact operands (inputs, parameters,
buffers) and on the operands rounded as each kind of low-precision arithmetic
rounds them (``ROUNDINGS``). A kernel that computes on rounded operands
carries that rounding's error pattern: its error against fp64 points the same
way (cosine ``SAME_DIRECTION`` or more) and is at least ``SHARE`` of that
rounding's size. An fp32 kernel's rounding errors, in whatever order it sums,
are unrelated to how the operands' low mantissa bits round, so its cosine is
near 0 (about 1/sqrt(n) over n output elements).

A rounding counts only where its effect stands out of fp32 noise (more than
``FP32_FACTOR`` times the fp32 reference's own error), and the kernel's error
must too. The check is skipped (with the reason) where it does not apply or
cannot run: TF32 allowed, a tolerance set by the task (atol/rtol: the user said
what error is acceptable), outputs or inputs that are not fp32, fewer than
``MIN_ELEMENTS`` output elements (too few for a direction to mean anything),
too little free memory for the fp64 copies, or a reference that cannot run in
fp64.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable, List, Optional, Tuple

import torch

from .chunks import CHUNK, grouped_chunks
from .device import nbytes, tensors_in
from .loading import Problem

SHARE = 0.25
FP32_FACTOR = 4.0
SAME_DIRECTION = 0.5
MIN_ELEMENTS = 256
# fp64 copies of one draw (inputs and outputs, twice) and the model, plus the
# reference's temporaries, must fit in this share of the free memory.
MEMORY_FRACTION = 0.5

Rounding = Callable[[torch.Tensor], torch.Tensor]


def tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 values rounded to TF32's 10-bit mantissa (to nearest, ties away;
    fp16 arithmetic rounds the same way within its range)."""
    bits = t.float().contiguous().clone().view(torch.int32)
    bits.add_(0x1000).bitwise_and_(~0x1FFF)
    return bits.view(torch.float32).view(t.shape)


def tf32_truncated(t: torch.Tensor) -> torch.Tensor:
    """fp32 values with the 13 mantissa bits below TF32's dropped (tensor
    cores fed fp32 bit patterns ignore them)."""
    bits = t.float().contiguous().clone().view(torch.int32)
    bits.bitwise_and_(~0x1FFF)
    return bits.view(torch.float32).view(t.shape)


def bf16(t: torch.Tensor) -> torch.Tensor:
    """fp32 values rounded to bf16 (to nearest, ties to even)."""
    return t.to(torch.bfloat16).float()


ROUNDINGS: Tuple[Tuple[str, Rounding], ...] = (
    ("TF32/fp16", tf32),
    ("truncated TF32", tf32_truncated),
    ("bf16", bf16),
)


def _to64(obj: Any, rounding: Optional[Rounding]) -> Any:
    if isinstance(obj, torch.Tensor):
        if obj.dtype != torch.float32:
            return obj
        t = rounding(obj) if rounding is not None else obj
        return t.double()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to64(o, rounding) for o in obj)
    return obj


def _model64(model: torch.nn.Module, rounding: Optional[Rounding]) -> torch.nn.Module:
    m = copy.deepcopy(model)
    with torch.no_grad():
        for t in list(m.parameters()) + list(m.buffers()):
            if t.dtype == torch.float32 and rounding is not None:
                t.copy_(rounding(t))
    return m.double()


class _Sums:
    """Running dot products of error vectors, in fp64, over finite elements."""

    def __init__(self) -> None:
        self.dd = 0.0  # |d|^2 of the compared run
        self.ee = 0.0  # |e|^2 of a second run, against the same exact result
        self.de = 0.0  # d . e
        self.norm = 0.0  # |exact|^2

    def add(self, exact: torch.Tensor, run: torch.Tensor, other: Optional[torch.Tensor]) -> None:
        x = exact.double()
        d = run.double() - x
        fin = torch.isfinite(d) & torch.isfinite(x)
        e = None
        if other is not None:
            e = other.double() - x
            fin &= torch.isfinite(e)
        zero = torch.zeros((), dtype=torch.float64, device=x.device)
        d = torch.where(fin, d, zero).flatten()
        x = torch.where(fin, x, zero).flatten()
        self.dd += float(torch.dot(d, d))
        self.norm += float(torch.dot(x, x))
        if e is not None:
            e = torch.where(fin, e, zero).flatten()
            self.ee += float(torch.dot(e, e))
            self.de += float(torch.dot(d, e))

    def rel(self, sq: float) -> float:
        if self.norm == 0.0:
            return 0.0 if sq == 0.0 else math.inf
        return math.sqrt(sq / self.norm)

    def cosine(self) -> float:
        if self.dd == 0.0 or self.ee == 0.0:
            return 0.0
        return self.de / math.sqrt(self.dd * self.ee)


def _sums(exact: List[torch.Tensor], run: List[torch.Tensor], other: Optional[List[torch.Tensor]] = None) -> _Sums:
    s = _Sums()
    for i, x in enumerate(exact):
        tensors = [x, run[i]] + ([other[i]] if other is not None else [])
        if len({tuple(t.shape) for t in tensors}) != 1:
            s.dd = math.inf
            continue
        for piece in grouped_chunks(tensors, CHUNK):
            s.add(piece[0], piece[1], piece[2] if other is not None else None)
    return s


def _floats(obj: Any) -> List[torch.Tensor]:
    return [t for t in tensors_in(obj) if t.is_floating_point()]


def assess(problem: Problem, inputs: List[Any], ref: Any, out: Any) -> Tuple[bool, str, Optional[str]]:
    """(applies, note, failure): whether the check ran, what it measured or
    why it was skipped, and the reason for a failure (None when it passed)."""
    if problem.tf32 == "allow":
        return False, "TF32 is allowed for this task", None
    if problem.atol is not None or problem.rtol is not None:
        return False, "the task sets its own tolerance (atol/rtol)", None
    refs, outs = _floats(ref), _floats(out)
    if not refs or any(t.dtype != torch.float32 for t in refs) or len(outs) != len(refs):
        return False, "the outputs are not fp32", None
    if any(t.is_floating_point() and t.dtype != torch.float32 for t in tensors_in(inputs)):
        return False, "the inputs are not all fp32", None
    elements = sum(t.numel() for t in refs)
    if elements < MIN_ELEMENTS:
        return False, f"{elements} output elements are too few to tell rounded operands from another order of operations", None
    dev = problem.device
    params = sum(p.numel() * p.element_size() for p in problem.model.parameters())
    need = 2 * (2 * nbytes(inputs) + 5 * nbytes(ref) + 4 * params)
    if dev.is_gpu and dev.free_memory() * MEMORY_FRACTION < need:
        return False, f"needs {need / 2**30:.1f} GiB of free device memory for fp64 copies", None
    measured = []  # (name, rel error of the rounded run, cosine with the kernel's error)
    try:
        with torch.no_grad():
            exact = _floats(_model64(problem.model, None)(*_to64(inputs, None)))
            if len(exact) != len(refs):
                return False, "the fp64 reference has other outputs", None
            kernel = _sums(exact, outs)
            e_kernel = kernel.rel(kernel.dd)
            fp32 = _sums(exact, refs)
            e_fp32 = fp32.rel(fp32.dd)
            for name, rounding in ROUNDINGS:
                rounded = _floats(_model64(problem.model, rounding)(*_to64(inputs, rounding)))
                if len(rounded) != len(refs):
                    return False, "the fp64 reference has other outputs", None
                s = _sums(exact, outs, rounded)
                del rounded
                measured.append((name, s.rel(s.ee), s.cosine()))
            del exact
    except BaseException as exc:  # noqa: BLE001 - a reference that has no fp64 path
        return False, f"the reference does not run in fp64 ({type(exc).__name__})", None
    finally:
        dev.empty_cache()
    note = (f"rel L2 error against fp64: kernel {e_kernel:.2g}, fp32 reference {e_fp32:.2g}; operands rounded: "
            + ", ".join(f"{name} {e:.2g} (cosine with the kernel's error {c:+.2f})" for name, e, c in measured))
    if e_kernel <= FP32_FACTOR * e_fp32:
        return True, note, None
    for name, e_round, cos in measured:
        if e_round > FP32_FACTOR * e_fp32 and e_kernel >= SHARE * e_round and cos >= SAME_DIRECTION:
            return True, note, (
                f"{note}: the kernel's error has the pattern of {name} operands, so it computes at lower precision "
                f"in an fp32 problem with TF32 forbidden (tl.dot on fp32 operands uses TF32 unless given "
                f"input_precision=\"ieee\"): compute in fp32, or set tf32: allow in kagent.yaml if TF32 is "
                f"acceptable for this task"
            )
    return True, note, None
