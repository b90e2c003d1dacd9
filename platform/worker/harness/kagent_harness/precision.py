"""The precision check: lower-precision arithmetic in an fp32 problem.

With TF32 forbidden, an fp32 problem's kernel must compute in fp32. A kernel
that rounds its operands to a 10-bit mantissa (TF32 tensor-core dots, which
``tl.dot`` uses on fp32 operands unless told ``input_precision="ieee"``; fp16
or bf16 arithmetic) can still pass the element tolerance, on long reductions
or on all-positive inputs. Measured against an fp64 run of the reference on
draw 1 are: the kernel's error, the fp32 reference's own error, and the error
of the reference run on operands (inputs, parameters, buffers) rounded to
TF32. A kernel whose error reaches ``TF32_SHARE`` of the TF32 level and is more
than ``FP32_FACTOR`` times the fp32 reference's own fails: no fp32 computation,
whatever its order of operations, comes near the error of rounding every
operand to 10 bits.

It is skipped (with the reason) where it does not apply or cannot run: TF32
allowed, a tolerance set by the task (atol/rtol: the user said what error is
acceptable), outputs or inputs that are not fp32, too little free memory for the
fp64 copies, or a reference that cannot run in fp64.
"""

from __future__ import annotations

import copy
import math
from typing import Any, List, Optional, Tuple

import torch

from .chunks import CHUNK, paired_chunks
from .device import nbytes, tensors_in
from .loading import Problem

TF32_SHARE = 0.25
FP32_FACTOR = 4.0
# fp64 copies of one draw (inputs and outputs, twice) and the model, plus the
# reference's temporaries, must fit in this share of the free memory.
MEMORY_FRACTION = 0.5


def _to64(obj: Any, round_tf32: bool) -> Any:
    if isinstance(obj, torch.Tensor):
        if obj.dtype != torch.float32:
            return obj
        t = tf32(obj) if round_tf32 else obj
        return t.double()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to64(o, round_tf32) for o in obj)
    return obj


def tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 values rounded to TF32's 10-bit mantissa (to nearest, ties away)."""
    bits = t.float().contiguous().clone().view(torch.int32)
    bits.add_(0x1000).bitwise_and_(~0x1FFF)
    return bits.view(torch.float32).view(t.shape)


def _model64(model: torch.nn.Module, round_tf32: bool) -> torch.nn.Module:
    m = copy.deepcopy(model)
    with torch.no_grad():
        for t in list(m.parameters()) + list(m.buffers()):
            if t.dtype == torch.float32 and round_tf32:
                t.copy_(tf32(t))
    return m.double()


def _rel_l2(a: List[torch.Tensor], b: List[torch.Tensor]) -> float:
    """||a - b|| / ||b|| over all pairs, in fp64, on finite elements, in pieces."""
    diff = 0.0
    norm = 0.0
    for x, y in zip(a, b):
        if tuple(x.shape) != tuple(y.shape):
            return math.inf
        for _, px, py in paired_chunks(x, y, CHUNK):
            x64 = px.double()
            y64 = py.double()
            fin = torch.isfinite(x64) & torch.isfinite(y64)
            d = torch.where(fin, x64 - y64, torch.zeros((), dtype=torch.float64, device=x64.device))
            r = torch.where(fin, y64, torch.zeros((), dtype=torch.float64, device=y64.device))
            diff += float(torch.dot(d.flatten(), d.flatten()))
            norm += float(torch.dot(r.flatten(), r.flatten()))
    if norm == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return math.sqrt(diff / norm)


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
    dev = problem.device
    params = sum(p.numel() * p.element_size() for p in problem.model.parameters())
    need = 2 * (2 * nbytes(inputs) + 5 * nbytes(ref) + 4 * params)
    if dev.is_gpu and dev.free_memory() * MEMORY_FRACTION < need:
        return False, f"needs {need / 2**30:.1f} GiB of free device memory for fp64 copies", None
    # The fp64 result is needed in fp64 only against the kernel and the fp32
    # reference; against the TF32-rounded run (errors near 1e-4) fp32 will do,
    # so it is kept in fp32 while that run takes its memory.
    try:
        with torch.no_grad():
            exact_f = _floats(_model64(problem.model, False)(*_to64(inputs, False)))
            if len(exact_f) != len(refs):
                return False, "the fp64 reference has other outputs", None
            e_kernel = _rel_l2(outs, exact_f)
            e_fp32 = _rel_l2(refs, exact_f)
            exact_f = [t.float() for t in exact_f]
            rounded_f = _floats(_model64(problem.model, True)(*_to64(inputs, True)))
            if len(rounded_f) != len(refs):
                return False, "the fp64 reference has other outputs", None
            e_tf32 = _rel_l2(rounded_f, exact_f)
            del exact_f, rounded_f
    except BaseException as exc:  # noqa: BLE001 - a reference that has no fp64 path
        return False, f"the reference does not run in fp64 ({type(exc).__name__})", None
    finally:
        dev.empty_cache()
    note = (f"rel L2 error against fp64: kernel {e_kernel:.2g}, fp32 reference {e_fp32:.2g}, "
            f"operands rounded to TF32 {e_tf32:.2g}")
    if e_tf32 > 0 and e_kernel >= TF32_SHARE * e_tf32 and e_kernel > FP32_FACTOR * e_fp32:
        return True, note, (
            f"{note}: the kernel computes at TF32/fp16 precision in an fp32 problem with TF32 forbidden "
            f"(tl.dot on fp32 operands uses TF32 unless given input_precision=\"ieee\"): compute in fp32, or set "
            f"tf32: allow in kagent.yaml if TF32 is acceptable for this task"
        )
    return True, note, None
