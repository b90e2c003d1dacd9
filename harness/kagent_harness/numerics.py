"""Comparing candidate outputs with reference outputs.

An output passes only if its structure, shapes, dtypes and devices match
exactly, every element is within ``atol + rtol * |ref|`` (NaN/Inf never pass
where the reference is finite), and the relative L2 error
``||out - ref|| / ||ref||`` is at most ``rel_l2`` (derived from the tolerance,
see ``tolerance_for``). The second criterion is what makes all-zero or
near-constant outputs fail on problems whose reference values are tiny.

Large tensors are compared in pieces (``chunks.py``) so the temporaries stay small
whatever the tensors' sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple, Union

import torch

from . import fused
from .chunks import CHUNK, paired_chunks


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
    """Pieces of out and ref (same shape) in a common wide dtype; complex
    tensors as float64 (real, imag) pairs, offsets counted in those units."""
    wide = torch.float64 if torch.float64 in (out.dtype, ref.dtype) else torch.float32
    cplx = out.is_complex() or ref.is_complex()
    for start, o, r in paired_chunks(out, ref, CHUNK):
        if cplx:
            yield (
                2 * start,
                torch.view_as_real(o.to(torch.complex128)).reshape(-1),
                torch.view_as_real(r.to(torch.complex128)).reshape(-1),
            )
        else:
            yield start, o.to(wide), r.to(wide)


def _element(t: torch.Tensor, flat: int) -> Any:
    """The element at a row-major flat index (of the real view for complex)."""
    if t.is_complex():
        v = t.detach()[_index_of(flat // 2, tuple(t.shape))].item()
        return v.imag if flat % 2 else v.real
    return t.detach()[_index_of(flat, tuple(t.shape))].item()


def _first_true(mask_of: Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor], out: torch.Tensor,
                ref: torch.Tensor) -> int:
    """The first flat offset where mask_of(piece) is set (a second pass, run
    only on failure), or -1."""
    with torch.no_grad():
        for start, o, r in _chunks(out, ref):
            m = mask_of(start, o, r)
            if bool(m.any()):
                return start + int(torch.nonzero(m)[0])
    return -1


def _new_nan(start: int, o: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return torch.isnan(o) & ~torch.isnan(r)


def _nonfinite_differs(start: int, o: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Where the reference is NaN or Inf and the output is not the same."""
    same = (o == r) | (torch.isnan(o) & torch.isnan(r))
    return ~torch.isfinite(r) & ~same


def _value(x: Any) -> str:
    """An element as compared: enough digits to show a difference in fp32."""
    try:
        return f"{x:.8g}"
    except (TypeError, ValueError):
        return repr(x)


def _differing(out: torch.Tensor, ref: torch.Tensor) -> Any:
    """How many elements of two same-shape tensors of one integer or bool
    dtype differ, as a device tensor (not read back)."""
    if fused.usable(out, ref):
        n = fused.count_differing(out, ref)
        if n is not None:
            return n
    counts = [(o != r).sum() for _, o, r in paired_chunks(out, ref, CHUNK)]
    return torch.stack(counts).sum()


def _statistics(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> Tuple[int, int, int, float, float, float, int, float]:
    """(new NaN, bad Inf, elements beyond tolerance, squared norm of the
    finite difference, of the finite reference, largest |difference|, its
    flat offset, largest |reference|), read back with one synchronisation:
    one fused kernel where it runs (fused.py), else torch in pieces."""
    if fused.usable(out, ref):
        stats = fused.compare_stats(out, ref, tol.atol, tol.rtol)
        if stats is not None:
            v = stats.tolist()
            return int(v[0]), int(v[1]), int(v[2]), v[3], v[4], v[5], int(v[6]), v[7]
    # Per piece: counts of new NaN, bad Inf and elements beyond tolerance, the
    # squared norms of the difference and of the reference (float64), the
    # piece's largest |difference| and where, and the largest |reference|.
    counts: List[torch.Tensor] = []
    norms: List[torch.Tensor] = []
    peaks: List[torch.Tensor] = []
    where_max: List[torch.Tensor] = []
    starts: List[int] = []
    with torch.no_grad():
        for start, o, r in _chunks(out, ref):
            r_fin = torch.isfinite(r)
            nan_new = torch.isnan(o)
            nan_new &= ~torch.isnan(r)
            inf_bad = torch.isinf(o)
            inf_bad &= r_fin
            close = torch.isclose(o, r, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
            counts.append(torch.stack([nan_new.sum(), inf_bad.sum(), o.numel() - close.sum()]))
            del nan_new, inf_bad, close
            both = torch.isfinite(o)
            both &= r_fin
            zero = torch.zeros((), dtype=o.dtype, device=o.device)
            d = torch.where(both, o - r, zero)
            del both
            rz = torch.where(r_fin, r, zero)
            del r_fin
            dd = d.double()
            rr = rz.double()
            norms.append(torch.stack([torch.dot(dd, dd), torch.dot(rr, rr)]))
            del dd, rr
            ad = d.abs_()
            peaks.append(torch.stack([ad.max().to(torch.float64), rz.abs_().max().to(torch.float64)]))
            where_max.append(ad.argmax())
            starts.append(start)
            del d, rz, ad
        count_rows = torch.stack(counts).sum(0).tolist()
        norm_rows = torch.stack(norms).sum(0).tolist()
        peak_rows = torch.stack(peaks).tolist()
        where_rows = torch.stack(where_max).tolist()
    new_nan, bad_inf, mismatch = (int(v) for v in count_rows)
    diff_sq, ref_sq = (float(v) for v in norm_rows)
    max_abs = 0.0
    max_at = -1
    ref_absmax = 0.0
    for start, (cmax, rmax), arg in zip(starts, peak_rows, where_rows):
        if cmax > max_abs or max_at < 0:
            max_abs = cmax
            max_at = start + int(arg)
        ref_absmax = max(ref_absmax, rmax)
    return new_nan, bad_inf, mismatch, diff_sq, ref_sq, max_abs, max_at, ref_absmax


def compare_tensor(out: torch.Tensor, ref: torch.Tensor, tol: Tolerance, name: str) -> Comparison:
    """Compare one output tensor with its reference (same device).

    The statistics stay on the device and are read back with one
    synchronisation (``_statistics``; a second pass locates the first
    offending element only when there is one)."""
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
            bad = int(_differing(out, ref))
            if bad:
                first = -1
                for start, o, r in paired_chunks(out, ref, CHUNK):
                    diff = o != r
                    if bool(diff.any()):
                        first = start + int(torch.nonzero(diff)[0])
                        break
                at = _index_of(first, tuple(ref.shape))
                got = _element(out, first)
                want = _element(ref, first)
                return Comparison(
                    False,
                    reason=f"{name}: {bad} of {ref.numel()} elements differ (exact match required for "
                    f"{str(ref.dtype)[6:]}); first at index {list(at)}: got {got}, expected {want}",
                )
        return Comparison(True)

    # Bit for bit the same (no NaN: NaN never equals itself): nothing to
    # measure, in one pass instead of the statistics' dozen.
    with torch.no_grad():
        if torch.equal(out, ref):
            return Comparison(True, max_abs_err=0.0, rel_l2=0.0)

    new_nan, bad_inf, mismatch, diff_sq, ref_sq, max_abs, max_at, ref_absmax = _statistics(out, ref, tol)
    ref_norm = math.sqrt(ref_sq)
    rel = math.sqrt(diff_sq) / ref_norm if ref_norm > 0 else (0.0 if diff_sq == 0 else math.inf)
    shape = tuple(ref.shape)
    if new_nan:
        first_nan = _first_true(_new_nan, out, ref)
        at = list(_index_of(first_nan // 2 if ref.is_complex() else first_nan, shape))
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
        # Differences on finite elements show in max_abs; where they do not,
        # the output differs where the reference is NaN or Inf.
        first_nonfinite = _first_true(_nonfinite_differs, out, ref) if max_abs <= tol.atol else -1
        if first_nonfinite >= 0:
            at = list(_index_of(first_nonfinite // 2 if ref.is_complex() else first_nonfinite, shape))
            return Comparison(
                False,
                reason=f"{name}: {mismatch} of {ref.numel()} elements differ; where the reference is NaN or Inf "
                f"the output is not (first at index {at}: got {_value(_element(out, first_nonfinite))}, "
                f"expected {_value(_element(ref, first_nonfinite))}): keep NaN and Inf as the reference does",
                max_abs_err=max_abs,
                rel_l2=rel,
            )
        at_i = max_at
        at = list(_index_of(at_i // 2 if ref.is_complex() else at_i, shape))
        got = _element(out, at_i)
        want = _element(ref, at_i)
        return Comparison(
            False,
            reason=f"{name}: {mismatch} of {ref.numel()} elements differ beyond {tol.text()}; "
            f"max abs err {_fmt(max_abs)} at index {at} (got {_value(got)}, expected {_value(want)}); "
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


def _as_words(t: torch.Tensor) -> torch.Tensor:
    """A real/integer view whose equality is bit-pattern equality."""
    x = t.detach()
    if x.is_complex():
        x = torch.view_as_real(x)
    if x.is_floating_point():
        as_int = _BITS.get(x.element_size())
        if as_int is not None and x.is_contiguous():
            return x.view(as_int)
    return x


def tensor_bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape, device and bit pattern (NaN payloads included),
    compared in pieces with one synchronisation."""
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape) or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    if fused.usable(a, b):
        n = fused.count_differing(a, b)
        if n is not None:
            return not bool(n)
    flags: List[torch.Tensor] = []
    with torch.no_grad():
        for _, x, y in paired_chunks(a, b, CHUNK):
            if x.is_floating_point() or x.is_complex():
                wx, wy = _as_words(x), _as_words(y)
                if wx.is_floating_point():  # no integer type of that width: compare values
                    flags.append((~(wx == wy) & ~(torch.isnan(wx) & torch.isnan(wy))).any())
                    continue
                flags.append((wx != wy).any())
            else:
                flags.append((x != y).any())
        return not bool(torch.stack(flags).any())


def difference_summary(a: torch.Tensor, b: torch.Tensor) -> str:
    """'k of n elements differ (max diff m)' for two tensors of one shape and
    dtype (bitwise; NaN equals NaN), computed in pieces; '' if none differ."""
    count: List[torch.Tensor] = []
    peak: List[torch.Tensor] = []
    floating = a.is_floating_point() or a.is_complex()
    with torch.no_grad():
        for _, x, y in paired_chunks(a, b, CHUNK):
            if floating:
                if x.is_complex():
                    x, y = torch.view_as_real(x).reshape(-1), torch.view_as_real(y).reshape(-1)
                xx, yy = x.double(), y.double()
                differ = ~((xx == yy) | (torch.isnan(xx) & torch.isnan(yy)))
                count.append(differ.sum())
                diff = torch.where(differ, (xx - yy).abs(), torch.zeros_like(xx))
                peak.append(torch.nan_to_num(diff, nan=float("inf")).max())
            else:
                count.append((x != y).sum())
        k = int(torch.stack(count).sum())
        if not k:
            return ""
        if floating:
            m = float(torch.stack(peak).max())
            return f"{k} of {a.numel()} elements differ (max diff {m:.3g})"
    return f"{k} of {a.numel()} elements differ"


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
        total: Any = 0
        if not (ref.is_floating_point() or ref.is_complex()):
            with torch.no_grad():
                return _differing(out, ref)
        diff_sq: Any = 0
        ref_sq: Any = 0
        with torch.no_grad():
            # On the CPU (where reading a result back costs no synchronisation)
            # an output equal bit for bit needs no statistics.
            if out.device.type == "cpu" and torch.equal(out, ref):
                return 0
            stats = fused.compare_stats(out, ref, tol.atol, tol.rtol) if fused.usable(out, ref) else None
            if stats is not None:
                # Beyond tolerance, plus one if the relative L2 error is too large.
                diff_sq, ref_sq = stats[3], stats[4]
                rel_bad = (diff_sq > (tol.rel_l2 ** 2) * ref_sq) & (ref_sq > 0)
                return stats[2].to(torch.int64) + rel_bad.to(torch.int64)
            for _, o, r in _chunks(out, ref):
                close = torch.isclose(o, r, rtol=tol.rtol, atol=tol.atol, equal_nan=True)
                total = total + (o.numel() - close.sum())
                del close
                r_fin = torch.isfinite(r)
                zero = torch.zeros((), dtype=o.dtype, device=o.device)
                d = torch.where(r_fin & torch.isfinite(o), o - r, zero).double()
                rz = torch.where(r_fin, r, zero).double()
                diff_sq = diff_sq + torch.dot(d, d)
                ref_sq = ref_sq + torch.dot(rz, rz)
                del d, rz, r_fin
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
