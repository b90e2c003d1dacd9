"""Comparing candidate outputs with reference outputs.

An output passes only if its structure, shapes, dtypes and devices match
exactly, every element is within ``atol + rtol * |ref|`` (NaN/Inf never pass
where the reference is finite), and the relative L2 error
``||out - ref|| / ||ref||`` is at most ``rel_l2`` (derived from the tolerance,
see ``tolerance_for``). The second criterion is what makes all-zero or
near-constant outputs fail on problems whose reference values are tiny.

Large tensors are compared in chunks so the temporaries stay small.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple, Union

import torch

CHUNK = 1 << 24  # elements per comparison chunk

# Default tolerances by reference dtype (atol = rtol), as in KernelBench.
DEFAULT_TOLERANCE = {
    torch.float64: 1e-7,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 1e-2,
    torch.complex64: 1e-4,
    torch.complex128: 1e-7,
}
FP8_TOLERANCE = 1e-1
# The relative L2 bound is REL_L2_FACTOR times the larger of atol and rtol,
# capped at REL_L2_CAP: fp32 1e-3, fp16/bf16 1e-1. Correct kernels are far
# below it (rounding gives ~1e-6 in fp32, ~3e-3 in bf16); zeros give 1.0.
REL_L2_FACTOR = 10.0
REL_L2_CAP = 0.5


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    rel_l2: float

    def text(self) -> str:
        return f"atol={self.atol:g}, rtol={self.rtol:g}"


def tolerance_for(dtype: torch.dtype, atol: Optional[float] = None, rtol: Optional[float] = None) -> Tolerance:
    base = DEFAULT_TOLERANCE.get(dtype)
    if base is None:
        base = FP8_TOLERANCE if "float8" in str(dtype) else 1e-4
    a = base if atol is None else float(atol)
    r = base if rtol is None else float(rtol)
    bound = min(REL_L2_CAP, REL_L2_FACTOR * max(a, r, 1e-7))
    return Tolerance(a, r, bound)


ToleranceFn = Callable[[torch.dtype], Tolerance]


@dataclass
class Comparison:
    ok: bool
    check: str = "correctness"  # or "unwritten_output"
    reason: str = ""
    max_abs_err: float = 0.0
    rel_l2: float = 0.0


_PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, complex)) and not isinstance(x, bool)


def _index_of(flat: int, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    idx: List[int] = []
    for dim in reversed(shape):
        idx.append(flat % dim if dim else 0)
        flat = flat // dim if dim else 0
    return tuple(reversed(idx))


def _fmt(x: Any) -> str:
    try:
        return f"{x:.4g}"
    except (TypeError, ValueError):
        return repr(x)


def _chunks(out: torch.Tensor, ref: torch.Tensor) -> Iterator[Tuple[int, torch.Tensor, torch.Tensor]]:
    o = out.detach().reshape(-1)
    r = ref.detach().reshape(-1)
    wide = torch.float64 if torch.float64 in (o.dtype, r.dtype) else torch.float32
    if o.is_complex() or r.is_complex():
        o = torch.view_as_real(o.to(torch.complex128)).reshape(-1)
        r = torch.view_as_real(r.to(torch.complex128)).reshape(-1)
        wide = torch.float64
    n = o.numel()
    for start in range(0, n, CHUNK):
        yield start, o[start : start + CHUNK].to(wide), r[start : start + CHUNK].to(wide)


def compare_tensor(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance, name: str) -> Comparison:
    """Compare one output tensor with its reference (same device)."""
    if type(out) not in _PLAIN_TENSOR_TYPES:
        return Comparison(False, reason=f"{name} is a {type(out).__name__}; return a plain torch.Tensor")
    if tuple(out.shape) != tuple(ref.shape):
        return Comparison(False, reason=f"{name} has shape {list(out.shape)}, expected {list(ref.shape)}")
    if out.dtype != ref.dtype:
        return Comparison(
            False, reason=f"{name} has dtype {str(out.dtype)[6:]}, expected {str(ref.dtype)[6:]}"
        )
    if out.device != ref.device:
        return Comparison(False, reason=f"{name} is on {out.device}, expected {ref.device}")
    if out.numel() == 0:
        return Comparison(True)
    if not (ref.is_floating_point() or ref.is_complex()):
        with torch.no_grad():
            diff = (out != ref).reshape(-1)
            bad = int(diff.sum())
            if bad:
                first = int(torch.nonzero(diff)[0])
                at = _index_of(first, tuple(ref.shape))
                got = out.reshape(-1)[first].item()
                want = ref.reshape(-1)[first].item()
                return Comparison(
                    False,
                    reason=f"{name}: {bad} of {ref.numel()} elements differ (exact match required for "
                    f"{str(ref.dtype)[6:]}); first at index {list(at)}: got {got}, expected {want}",
                )
        return Comparison(True)

    new_nan = 0
    first_nan = -1
    bad_inf = 0
    mismatch = 0
    first_mismatch = -1
    diff_sq = 0.0
    ref_sq = 0.0
    max_abs = 0.0
    max_at = -1
    ref_absmax = 0.0
    with torch.no_grad():
        for start, o, r in _chunks(out, ref):
            o_nan = torch.isnan(o)
            r_nan = torch.isnan(r)
            r_fin = torch.isfinite(r)
            nan_new = o_nan & ~r_nan
            k = int(nan_new.sum())
            if k:
                if first_nan < 0:
                    first_nan = start + int(torch.nonzero(nan_new)[0])
                new_nan += k
            inf_bad = torch.isinf(o) & r_fin
            bad_inf += int(inf_bad.sum())
            close = torch.isclose(o, r, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
            not_close = ~close
            m = int(not_close.sum())
            if m:
                if first_mismatch < 0:
                    first_mismatch = start + int(torch.nonzero(not_close)[0])
                mismatch += m
            both = r_fin & torch.isfinite(o)
            d = torch.where(both, o - r, torch.zeros_like(o))
            rz = torch.where(r_fin, r, torch.zeros_like(r))
            diff_sq += float((d.double() * d.double()).sum())
            ref_sq += float((rz.double() * rz.double()).sum())
            ad = d.abs()
            cmax = float(ad.max())
            if cmax > max_abs or max_at < 0:
                max_abs = cmax
                max_at = start + int(ad.argmax())
            ref_absmax = max(ref_absmax, float(rz.abs().max()))
    ref_norm = math.sqrt(ref_sq)
    rel = math.sqrt(diff_sq) / ref_norm if ref_norm > 0 else (0.0 if diff_sq == 0 else math.inf)
    shape = tuple(ref.shape)
    if new_nan:
        at = list(_index_of(first_nan, shape))
        return Comparison(
            False,
            check="unwritten_output",
            reason=f"{name}: {new_nan} of {ref.numel()} elements are NaN where the reference is finite "
            f"(first at index {at}); outputs and free memory are NaN-poisoned before each call, so part "
            f"of the output is never written (or the kernel computes NaN): write every output element",
            max_abs_err=max_abs,
            rel_l2=rel,
        )
    if bad_inf:
        return Comparison(
            False,
            reason=f"{name}: {bad_inf} elements are Inf where the reference is finite (overflow?)",
            max_abs_err=max_abs,
            rel_l2=rel,
        )
    if mismatch:
        at_i = first_mismatch if max_at < 0 else max_at
        at = list(_index_of(at_i, shape))
        flat_o = out.detach().reshape(-1)
        flat_r = ref.detach().reshape(-1)
        got = flat_o[at_i].item()
        want = flat_r[at_i].item()
        return Comparison(
            False,
            reason=f"{name}: {mismatch} of {ref.numel()} elements differ beyond {tol.text()}; "
            f"max abs err {_fmt(max_abs)} at index {at} (got {_fmt(got)}, expected {_fmt(want)}); "
            f"rel L2 err {_fmt(rel)}",
            max_abs_err=max_abs,
            rel_l2=rel,
        )
    if ref_norm > 0 and rel > tol.rel_l2:
        return Comparison(
            False,
            reason=f"{name}: relative L2 error {_fmt(rel)} exceeds {_fmt(tol.rel_l2)} although every element "
            f"is within {tol.text()} (reference values are small, max |ref| {_fmt(ref_absmax)}): the result is "
            f"wrong, not merely imprecise",
            max_abs_err=max_abs,
            rel_l2=rel,
        )
    return Comparison(True, max_abs_err=max_abs, rel_l2=rel)


def compare_outputs(out: Any, ref: Any, tol_fn: ToleranceFn, name: str = "output") -> Comparison:
    """Compare a candidate's result with the reference's, recursively."""
    if isinstance(ref, torch.Tensor):
        if not isinstance(out, torch.Tensor):
            return Comparison(False, reason=f"{name} is {_kind(out)}, expected a Tensor of shape {list(ref.shape)}")
        return compare_tensor(out, ref, tol_fn(ref.dtype), name)
    if isinstance(ref, (list, tuple)):
        if not isinstance(out, (list, tuple)):
            return Comparison(False, reason=f"{name} is {_kind(out)}, expected a {type(ref).__name__} of {len(ref)}")
        if len(out) != len(ref):
            return Comparison(False, reason=f"{name} has {len(out)} elements, expected {len(ref)}")
        worst = Comparison(True)
        for i, (o, r) in enumerate(zip(out, ref)):
            c = compare_outputs(o, r, tol_fn, f"{name}[{i}]")
            if not c.ok:
                return c
            worst = _worse(worst, c)
        return worst
    if isinstance(ref, dict):
        if not isinstance(out, dict) or set(out) != set(ref):
            return Comparison(False, reason=f"{name} must be a dict with keys {sorted(map(str, ref))}")
        worst = Comparison(True)
        for key in ref:
            c = compare_outputs(out[key], ref[key], tol_fn, f"{name}[{key!r}]")
            if not c.ok:
                return c
            worst = _worse(worst, c)
        return worst
    if ref is None:
        if out is not None:
            return Comparison(False, reason=f"{name} is {_kind(out)}, expected None")
        return Comparison(True)
    if _is_number(ref) or isinstance(ref, bool):
        val: Any = out
        if isinstance(out, torch.Tensor) and out.numel() == 1:
            val = out.item()
        if isinstance(ref, bool) or isinstance(ref, int):
            if val != ref or isinstance(val, float) and not float(val).is_integer():
                return Comparison(False, reason=f"{name} is {val!r}, expected {ref!r}")
            return Comparison(True)
        if not _is_number(val):
            return Comparison(False, reason=f"{name} is {_kind(out)}, expected a number")
        tol = tol_fn(torch.float32)
        a, b = complex(val), complex(ref)
        if any(math.isnan(x) for x in (a.real, a.imag)) and not any(math.isnan(x) for x in (b.real, b.imag)):
            return Comparison(False, check="unwritten_output", reason=f"{name} is NaN, expected {ref!r}")
        if abs(a - b) > tol.atol + tol.rtol * abs(b):
            return Comparison(False, reason=f"{name} is {val!r}, expected {ref!r} ({tol.text()})")
        return Comparison(True, max_abs_err=abs(a - b))
    try:
        same = bool(out == ref)
    except Exception:  # noqa: BLE001
        same = False
    if not same:
        return Comparison(False, reason=f"{name} is {_kind(out)} {out!r:.60}, expected {ref!r:.60}")
    return Comparison(True)


def _worse(a: Comparison, b: Comparison) -> Comparison:
    return Comparison(True, max_abs_err=max(a.max_abs_err, b.max_abs_err), rel_l2=max(a.rel_l2, b.rel_l2))


def _kind(x: Any) -> str:
    if x is None:
        return "None"
    if isinstance(x, torch.Tensor):
        return f"a Tensor of shape {list(x.shape)}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)}"
    return f"a {type(x).__name__}"


# --- Bitwise comparison ----------------------------------------------------------

_BITS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}


def tensor_bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape) or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    x = a.detach().contiguous()
    y = b.detach().contiguous()
    if x.is_complex():
        x = torch.view_as_real(x)
        y = torch.view_as_real(y)
    if x.is_floating_point():
        as_int = _BITS.get(x.element_size())
        if as_int is None:
            return bool(torch.equal(x, y))
        return bool(torch.equal(x.view(as_int), y.view(as_int)))
    return bool(torch.equal(x, y))


def bits_equal(a: Any, b: Any) -> bool:
    """Structures equal with tensors equal bit for bit (NaN patterns included)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and tensor_bits_equal(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(bits_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(bits_equal(a[k], b[k]) for k in a)
    try:
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def first_changed_input(work: List[Any], pristine: List[Any]) -> Optional[str]:
    """Describe the first input whose contents differ from the pristine copy."""
    for i, (w, p) in enumerate(zip(work, pristine)):
        if isinstance(p, torch.Tensor):
            if not isinstance(w, torch.Tensor) or not tensor_bits_equal(w, p):
                return f"input {i} (shape {list(p.shape)})"
        elif not bits_equal(w, p):
            return f"input {i}"
    return None


# --- Device-side recheck (no host sync) --------------------------------------------


def device_violations(out: Any, ref: Any, tol_fn: ToleranceFn) -> Union[int, torch.Tensor]:
    """Number of violations as a device tensor (or a host int for structural
    mismatches), computed without synchronizing, for rechecking timed outputs."""
    if isinstance(ref, torch.Tensor):
        if type(out) not in _PLAIN_TENSOR_TYPES or tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
            return 1
        if out.device != ref.device:
            return 1
        if out.numel() == 0:
            return 0
        tol = tol_fn(ref.dtype)
        if not (ref.is_floating_point() or ref.is_complex()):
            return (out != ref).sum()
        total: Any = 0
        diff_sq: Any = 0
        ref_sq: Any = 0
        with torch.no_grad():
            for _, o, r in _chunks(out, ref):
                close = torch.isclose(o, r, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
                total = total + (~close).sum()
                r_fin = torch.isfinite(r)
                d = torch.where(r_fin & torch.isfinite(o), o - r, torch.zeros_like(o)).double()
                rz = torch.where(r_fin, r, torch.zeros_like(r)).double()
                diff_sq = diff_sq + (d * d).sum()
                ref_sq = ref_sq + (rz * rz).sum()
            if isinstance(ref_sq, torch.Tensor):
                rel_bad = (diff_sq > (tol.rel_l2 ** 2) * ref_sq) & (ref_sq > 0)
                total = total + rel_bad.to(torch.int64)
        return total
    if isinstance(ref, (list, tuple)):
        if not isinstance(out, (list, tuple)) or len(out) != len(ref):
            return 1
        acc: Any = 0
        for o, r in zip(out, ref):
            acc = acc + device_violations(o, r, tol_fn)
        return acc
    return 0 if compare_outputs(out, ref, tol_fn).ok else 1
