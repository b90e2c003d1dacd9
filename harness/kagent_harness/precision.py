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
operands by 1.8e-6). What tells it apart is the error's pattern. On one
verified draw, chosen at random once every draw's output is in (so a kernel
cannot tell which call is examined), the reference is run in fp64 on the exact operands (inputs, parameters,
buffers) and on the operands rounded as each kind of low-precision arithmetic
rounds them (``ROUNDINGS``). A kernel that computes on rounded operands
carries that rounding's error pattern: at least ``SAME_DIRECTION`` of its error
vector against fp64 (as a multiple correlation, 0 to 1) lies in the span of the
roundings' error vectors, and it is at least ``SHARE`` of the smallest of them.
The span rather than one pattern, because tensor cores seem to round again
while they accumulate: on the H200, a tl.dot on operands rounded to fp16 had
cosine 0.57 with the fp16 pattern and 0.82 with the truncated one. An fp32
kernel's rounding errors, in whatever order it sums, are unrelated to how the
operands' low mantissa bits round, so its share is near 0 (about
sqrt(3/n) over n output elements).

A rounding counts only where its effect stands out of fp32 noise (more than
``FP32_FACTOR`` times the fp32 reference's own error), and the kernel's error
must too. The check is skipped (with the reason) where it does not apply or
cannot run: TF32 allowed, a tolerance set by the task (atol/rtol: the user said
what error is acceptable), outputs or inputs that are not fp32, fewer than
``MIN_ELEMENTS`` output elements (too few for a direction to mean anything),
too little free memory for the fp64 copies, or a reference that cannot run in
fp64.

The fp64 runs are costly, so the other calls are held to the examined one
more cheaply (``consistency``): their error against the fp32 reference, which
every comparison measures anyway, must not exceed the examined draw's by more
than ``CONSISTENCY_FACTOR`` where it is also above fp32 noise and as large as
lower-precision arithmetic's. That covers the other verified draws and the
unseen draws timing calls on; timed calls on verified draws must give the
verified bits.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch

from .chunks import CHUNK, grouped_chunks
from .device import nbytes, tensors_in
from .loading import Problem

SHARE = 0.25
FP32_FACTOR = 4.0
SAME_DIRECTION = 0.5
MIN_ELEMENTS = 256
PARALLEL = 1e-3
# Other calls (the other verified draws, the unseen draws of timing) are held
# to the examined draw's error against the fp32 reference: an error more than
# CONSISTENCY_FACTOR times it, above fp32 noise and as large as
# lower-precision arithmetic's (SHARE of the smallest rounding's), is a kernel
# that computes at lower precision on calls other than the examined one.
CONSISTENCY_FACTOR = 3.0
# The check's copies (fp64 inputs and model, the exact and one rounded fp64
# result, two roundings' errors), twice over for the reference's temporaries,
# must fit in this share of the free memory.
MEMORY_FRACTION = 0.5

Rounding = Callable[[torch.Tensor], torch.Tensor]


def tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 values rounded to TF32's 10-bit mantissa (to nearest, ties away;
    fp16 arithmetic rounds the same way within its range)."""
    bits = t.float().contiguous().clone().view(torch.int32)
    bits.add_(0x1000).bitwise_and_(~0x1FFF)
    return bits.view(torch.float32).view(t.shape)


def tf32_truncated(t: torch.Tensor) -> torch.Tensor:
    """fp32 values with the 13 mantissa bits below TF32's dropped (what
    tensor cores fed fp32 bit patterns appear to do on the H200)."""
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


class _Pass:
    """Dot products over the finite elements of all outputs, in fp64 and in
    pieces, of one run's error d (against the exact result) and, optionally,
    one rounding's error e against the stored errors of earlier roundings."""

    def __init__(self) -> None:
        self.norm = 0.0  # |exact|^2
        self.dd = 0.0  # |d|^2
        self.de = 0.0  # d . e
        self.ee = 0.0  # |e|^2
        self.cross: List[float] = []  # e . (stored error j)
        self.kept: List[torch.Tensor] = []  # e in bf16, one per output, when asked to keep it


def _pass(exact: List[torch.Tensor], run: List[torch.Tensor], rounded: Optional[List[torch.Tensor]] = None,
          stored: Sequence[List[torch.Tensor]] = (), keep: bool = False) -> _Pass:
    """One walk over the outputs. A rounding's error is kept in bf16 (for the
    dot products with later roundings' errors), which is ample for a cosine and
    a quarter of its fp64 size."""
    p = _Pass()
    p.cross = [0.0] * len(stored)
    for o, x in enumerate(exact):
        group = [x, run[o]] + ([rounded[o]] if rounded is not None else []) + [s[o] for s in stored]
        if len({tuple(t.shape) for t in group}) != 1:
            p.dd = math.inf
            return p
        buf = torch.empty(x.numel(), dtype=torch.bfloat16, device=x.device) if keep else None
        offset = 0
        for piece in grouped_chunks(group, CHUNK):
            x64 = piece[0].double()
            zero = torch.zeros((), dtype=torch.float64, device=x64.device)
            d = piece[1].double() - x64
            fin = torch.isfinite(d) & torch.isfinite(x64)
            e = None
            if rounded is not None:
                e = piece[2].double() - x64
                fin &= torch.isfinite(e)
                if buf is not None:
                    buf[offset:offset + e.numel()] = e.flatten().to(torch.bfloat16)
                    offset += e.numel()
            others = [t.double() for t in piece[3 if rounded is not None else 2:]]
            for t in others:
                fin &= torch.isfinite(t)
            x64 = torch.where(fin, x64, zero).flatten()
            d = torch.where(fin, d, zero).flatten()
            p.norm += float(torch.dot(x64, x64))
            p.dd += float(torch.dot(d, d))
            if e is not None:
                e = torch.where(fin, e, zero).flatten()
                p.de += float(torch.dot(d, e))
                p.ee += float(torch.dot(e, e))
                for j, t in enumerate(others):
                    p.cross[j] += float(torch.dot(e, torch.where(fin, t, zero).flatten()))
        if buf is not None:
            p.kept.append(buf.view(x.shape))
    return p


def _rel(sq: float, norm: float) -> float:
    if norm == 0.0:
        return 0.0 if sq == 0.0 else math.inf
    return math.sqrt(sq / norm)


def _explained(dd: float, de: List[float], ee: List[List[float]]) -> float:
    """The share of the error vector d (as a cosine, 0 to 1) that lies in the
    span of the e_i: its multiple correlation with them. Computed on unit
    vectors (the roundings' errors differ in size by orders of magnitude), and
    directions in which the e_i are nearly parallel (eigenvalues of their
    correlation matrix below ``PARALLEL``) are dropped: there the stored bf16
    errors' own rounding would decide."""
    keep = [i for i in range(len(de)) if ee[i][i] > 0 and math.isfinite(ee[i][i])]
    if not keep or dd == 0.0 or not math.isfinite(dd):
        return 0.0
    norms = [math.sqrt(ee[i][i]) for i in keep]
    corr = torch.tensor([[ee[i][j] / (ni * nj) for j, nj in zip(keep, norms)] for i, ni in zip(keep, norms)],
                        dtype=torch.float64)
    cos = torch.tensor([de[i] / (math.sqrt(dd) * n) for i, n in zip(keep, norms)], dtype=torch.float64)
    r2 = float(cos @ torch.linalg.pinv(corr, rtol=PARALLEL, hermitian=True) @ cos)
    return math.sqrt(min(max(r2, 0.0), 1.0))


def _floats(obj: Any) -> List[torch.Tensor]:
    return [t for t in tensors_in(obj) if t.is_floating_point()]


class Assessment(NamedTuple):
    """Whether the check ran, what it measured or why it was skipped, and the
    reason for a failure (None when it passed); then its measurements (rel L2
    against fp64): the kernel's, the fp32 reference's, and the smallest of the
    roundings whose effect stands out of fp32 noise (0.0: none does)."""

    applies: bool
    note: str
    failure: Optional[str] = None
    kernel: float = 0.0
    fp32: float = 0.0
    low: float = 0.0


class Bound(NamedTuple):
    """What other calls' errors against the fp32 reference (rel L2, as
    compare_outputs measures it) are held to once one call passed."""

    limit: float  # more than this ...
    floor: float  # ... and at least this fails
    examined: int  # the examined draw (0-based)

    def violated(self, rel: float) -> bool:
        return rel > self.limit and rel >= self.floor

    def reason(self, what: str, rel: float) -> str:
        return (f"{what}: error against the fp32 reference rel L2 {rel:.2g}, against {self.limit:.2g} at most on "
                f"draw {self.examined + 1}, where the precision check found fp32 arithmetic; lower-precision "
                f"arithmetic errs by {self.floor / SHARE:.2g}: the kernel computes at lower precision on some calls "
                f"(compute every call in fp32)")


def consistency(a: Assessment, examined: int, rels: Dict[int, float]) -> Optional[Bound]:
    """The bound a passed assessment of draw ``examined`` sets for other calls
    (None where the check did not apply or no rounding stands out of fp32
    noise); ``rels`` are the verified draws' errors against the fp32 reference
    by draw index."""
    if not a.applies or a.failure is not None or a.low <= 0.0 or examined not in rels:
        return None
    return Bound(max(CONSISTENCY_FACTOR * rels[examined], FP32_FACTOR * a.fp32), SHARE * a.low, examined)


def assess(problem: Problem, inputs: List[Any], ref: Any, out: Any) -> Assessment:
    """The check on one call's output (see the module doc)."""
    if problem.tf32 == "allow":
        return Assessment(False, "TF32 is allowed for this task")
    if problem.atol is not None or problem.rtol is not None:
        return Assessment(False, "the task sets its own tolerance (atol/rtol)")
    refs, outs = _floats(ref), _floats(out)
    if not refs or any(t.dtype != torch.float32 for t in refs) or len(outs) != len(refs):
        return Assessment(False, "the outputs are not fp32")
    if any(t.is_floating_point() and t.dtype != torch.float32 for t in tensors_in(inputs)):
        return Assessment(False, "the inputs are not all fp32")
    elements = sum(t.numel() for t in refs)
    if elements < MIN_ELEMENTS:
        return Assessment(False, f"{elements} output elements are too few to tell rounded operands from another "
                          f"order of operations")
    dev = problem.device
    params = sum(p.numel() * p.element_size() for p in problem.model.parameters())
    need = 2 * (3 * nbytes(inputs) + 6 * nbytes(ref) + 4 * params)
    if dev.is_gpu and dev.free_memory() * MEMORY_FRACTION < need:
        return Assessment(False, f"needs {need / 2**30:.1f} GiB of free device memory for fp64 copies")
    names = [name for name, _ in ROUNDINGS]
    # The kernel's error against each rounding's (de), and the Gram matrix of
    # the roundings' errors (ee).
    de: List[float] = []
    ee: List[List[float]] = [[0.0] * len(ROUNDINGS) for _ in ROUNDINGS]
    stored: List[List[torch.Tensor]] = []  # earlier roundings' errors, bf16, one per output
    try:
        with torch.no_grad():
            exact = _floats(_model64(problem.model, None)(*_to64(inputs, None)))
            if len(exact) != len(refs):
                return Assessment(False, "the fp64 reference has other outputs")
            fp32 = _pass(exact, refs)
            norm, dd_fp32 = fp32.norm, fp32.dd
            dd = math.inf
            for i, (_, rounding) in enumerate(ROUNDINGS):
                rounded = _floats(_model64(problem.model, rounding)(*_to64(inputs, rounding)))
                if len(rounded) != len(refs):
                    return Assessment(False, "the fp64 reference has other outputs")
                p = _pass(exact, outs, rounded, stored, keep=i < len(ROUNDINGS) - 1)
                del rounded
                dd = p.dd
                de.append(p.de)
                ee[i][i] = p.ee
                for j, c in enumerate(p.cross):
                    ee[i][j] = ee[j][i] = c
                if p.kept:
                    stored.append(p.kept)
            del exact
    except BaseException as exc:  # noqa: BLE001 - a reference that has no fp64 path
        return Assessment(False, f"the reference does not run in fp64 ({type(exc).__name__})")
    finally:
        del stored
        dev.empty_cache()
    e_kernel, e_fp32 = _rel(dd, norm), _rel(dd_fp32, norm)
    e_round = [_rel(ee[i][i], norm) for i in range(len(names))]
    cosine = [de[i] / math.sqrt(dd * ee[i][i]) if dd > 0 and ee[i][i] > 0 and math.isfinite(dd) else 0.0
              for i in range(len(names))]
    # Roundings whose effect stands out of fp32 noise; the kernel's error is
    # measured against the span of their error vectors.
    seen = [i for i in range(len(names)) if e_round[i] > FP32_FACTOR * e_fp32]
    share = _explained(dd, [de[i] for i in seen], [[ee[i][j] for j in seen] for i in seen])
    note = (f"rel L2 error against fp64: kernel {e_kernel:.2g}, fp32 reference {e_fp32:.2g}; operands rounded: "
            + ", ".join(f"{names[i]} {e_round[i]:.2g} (cosine with the kernel's error {cosine[i]:+.2f})"
                        for i in range(len(names)))
            + f"; share of the kernel's error in their pattern {share:.2f}")
    low = min((e_round[i] for i in seen), default=0.0)
    if not seen or e_kernel <= FP32_FACTOR * e_fp32 or e_kernel < SHARE * low:
        return Assessment(True, note, None, e_kernel, e_fp32, low)
    if share >= SAME_DIRECTION:
        closest = max(seen, key=lambda i: cosine[i])
        return Assessment(True, note, (
            f"{note}: the kernel's error has the pattern of {names[closest]} operands, so it computes at lower "
            f"precision in an fp32 problem with TF32 forbidden (tl.dot on fp32 operands uses TF32 unless given "
            f"input_precision=\"ieee\"): compute in fp32, or set tf32: allow in kagent.yaml if TF32 is "
            f"acceptable for this task"
        ), e_kernel, e_fp32, low)
    return Assessment(True, note, None, e_kernel, e_fp32, low)
