"""One-pass reductions of large tensors on an NVIDIA GPU: comparison
statistics, keyed checksums and bitwise equality, each a single Triton kernel
that reads every element once.

The same work done with torch operations goes through pieces of
``chunks.CHUNK`` elements, a dozen operations a piece (numerics.py,
checksum.py): a 6.4 GB output is 400 pieces, several thousand launches and a
dozen passes over the data with temporaries for each. Here each program
reads a contiguous span, keeps its partial results in registers and writes a
handful of numbers; the partials are combined with a few torch operations on
the device and read back once. What these kernels compute is what the torch
code computes (the same definitions, in the same wide dtype); only the order
of floating-point sums may differ (the squared norms, by rounding).

Used only where it pays and is known to work: contiguous tensors of at least
``MIN_ELEMENTS`` elements on a CUDA device that is not ROCm (Triton on ROCm
has not run these kernels), real dtypes (complex tensors take the torch path).
A kernel that fails to compile or launch turns this module off for the
process (``failure``), and the caller takes the torch path.
``KAGENT_FUSED=0`` turns it off.

The kernels run in the judge, never in a candidate's process; their
compilation cache is the run's (a runner has its own).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

# Below this many elements the torch path is a few launches anyway.
MIN_ELEMENTS = 1 << 20
# The checksum's fused path has a fixed cost of its own (its partials are
# combined by torch operations): on the H200 it took 0.31 ms against the
# torch path's 0.12 ms at 4 Mi fp32 elements, and 0.38 against 1.00 ms at
# 64 Mi (scripts/judge_reductions.py). checksum.py uses it from here up.
CHECKSUM_MIN_ELEMENTS = 1 << 24
# Elements per program step, and at most this many programs (each then walks
# a span of steps): enough to fill an H200 several times over.
BLOCK = 1024
MAX_PROGRAMS = 2048
# Programs per checksum block (chunks.CHUNK words).
CHECKSUM_SPLIT = 16
# Warps per program: the statistics keep eight running values per element of
# a step (64 registers a thread at 16 warps on sm_90, 208 at 4), the others one.
STATS_WARPS = 16
WARPS = 8

_FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_WORDS = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

_kernels: Dict[str, Any] = {}
_failed: List[str] = []


def failure() -> str:
    """Why the fused kernels are off in this process ("" when they are not)."""
    return _failed[0] if _failed else ""


def _device_ok(t: torch.Tensor) -> bool:
    return t.device.type == "cuda" and not getattr(torch.version, "hip", None)


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the fused kernels take these tensors (same shape assumed)."""
    if _failed or os.environ.get("KAGENT_FUSED", "1") == "0":
        return False
    for t in tensors:
        if not isinstance(t, torch.Tensor) or not _device_ok(t) or not t.is_contiguous():
            return False
        if t.numel() < MIN_ELEMENTS or t.is_complex():
            return False
    return True


def _fail(exc: BaseException) -> None:
    _failed.append(f"{type(exc).__name__}: {exc}"[:300])
    _kernels.clear()


def _compile() -> Dict[str, Any]:
    if _kernels:
        return _kernels
    import triton
    import triton.language as tl

    # Sizes are not specialised on: one compile per dtype serves every tensor.
    @triton.jit(do_not_specialize=["n", "span"])
    def _stats(o_ptr, r_ptr, tol_ptr, n, span, cnt_ptr, sq_ptr, dmax_ptr, darg_ptr, rmax_ptr,
               TOL_ON: tl.constexpr, WIDE64: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        base = pid.to(tl.int64) * span
        lanes = tl.arange(0, BLOCK)
        if WIDE64:
            atol = tl.load(tol_ptr)
            rtol = tl.load(tol_ptr + 1)
        else:
            atol = tl.load(tol_ptr).to(tl.float32)
            rtol = tl.load(tol_ptr + 1).to(tl.float32)
        c_nan = tl.zeros([BLOCK], dtype=tl.int64)
        c_inf = tl.zeros([BLOCK], dtype=tl.int64)
        c_bad = tl.zeros([BLOCK], dtype=tl.int64)
        s_d = tl.zeros([BLOCK], dtype=tl.float64)
        s_r = tl.zeros([BLOCK], dtype=tl.float64)
        m_d = tl.full([BLOCK], -1.0, dtype=tl.float64)
        a_d = tl.zeros([BLOCK], dtype=tl.int64)
        m_r = tl.zeros([BLOCK], dtype=tl.float64)
        for off in range(0, span, BLOCK):
            idx = base + off + lanes
            mask = idx < n
            if WIDE64:
                o = tl.load(o_ptr + idx, mask=mask, other=0).to(tl.float64)
                r = tl.load(r_ptr + idx, mask=mask, other=0).to(tl.float64)
            else:
                o = tl.load(o_ptr + idx, mask=mask, other=0).to(tl.float32)
                r = tl.load(r_ptr + idx, mask=mask, other=0).to(tl.float32)
            o_nan = o != o
            r_nan = r != r
            # x - x is 0 exactly when x is finite (Inf - Inf and NaN give NaN).
            o_fin = (o - o) == 0
            r_fin = (r - r) == 0
            o_inf = (o == o) & ~o_fin
            diff = o - r
            err = tl.abs(diff)
            # torch.isclose(o, r, rtol, atol, equal_nan=True)
            close = (o == r) | (o_nan & r_nan)
            if TOL_ON:
                close = close | (((err - err) == 0) & (err <= atol + tl.abs(rtol * r)))
            c_nan += (mask & o_nan & ~r_nan).to(tl.int64)
            c_inf += (mask & o_inf & r_fin).to(tl.int64)
            c_bad += (mask & ~close).to(tl.int64)
            d = tl.where(mask & o_fin & r_fin, diff, 0.0).to(tl.float64)
            rz = tl.where(mask & r_fin, r, 0.0).to(tl.float64)
            s_d += d * d
            s_r += rz * rz
            ad = tl.abs(d)
            # Strictly greater: each lane keeps the first index of its largest.
            up = ad > m_d
            m_d = tl.where(up, ad, m_d)
            a_d = tl.where(up, idx, a_d)
            m_r = tl.maximum(m_r, tl.abs(rz))
        tl.store(cnt_ptr + pid * 3, tl.sum(c_nan, axis=0))
        tl.store(cnt_ptr + pid * 3 + 1, tl.sum(c_inf, axis=0))
        tl.store(cnt_ptr + pid * 3 + 2, tl.sum(c_bad, axis=0))
        tl.store(sq_ptr + pid * 2, tl.sum(s_d, axis=0))
        tl.store(sq_ptr + pid * 2 + 1, tl.sum(s_r, axis=0))
        top = tl.max(m_d, axis=0)
        far = tl.full([BLOCK], 0x3FFFFFFFFFFFFFFF, dtype=tl.int64)
        tl.store(dmax_ptr + pid, top)
        tl.store(darg_ptr + pid, tl.min(tl.where(m_d == top, a_d, far), axis=0))
        tl.store(rmax_ptr + pid, tl.max(m_r, axis=0))

    @triton.jit(do_not_specialize=["n", "chunk", "span"])
    def _checksum(w_ptr, wt_ptr, n, chunk, span, out_ptr, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
        b = tl.program_id(0)
        s = tl.program_id(1)
        lanes = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.int64)
        lo = s.to(tl.int64) * span
        start = b.to(tl.int64) * chunk
        # This program's words: its span, within its block and the tensor.
        end = tl.minimum(tl.minimum(span, chunk - lo), n - start - lo)
        for off in range(0, end, BLOCK):
            at = lo + off + lanes  # position within the block: its weight
            idx = start + at
            mask = (at < chunk) & (idx < n)
            w = tl.load(w_ptr + idx, mask=mask, other=0).to(tl.int64)
            wt = tl.load(wt_ptr + at, mask=mask, other=0)
            acc += w * wt  # wraps modulo 2**64, as the torch path does
        tl.store(out_ptr + b * SPLIT + s, tl.sum(acc, axis=0))

    @triton.jit(do_not_specialize=["n", "span"])
    def _differ(a_ptr, b_ptr, n, span, out_ptr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        base = pid.to(tl.int64) * span
        lanes = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.int64)
        for off in range(0, span, BLOCK):
            idx = base + off + lanes
            mask = idx < n
            a = tl.load(a_ptr + idx, mask=mask, other=0)
            b = tl.load(b_ptr + idx, mask=mask, other=0)
            acc += (a != b).to(tl.int64)
        tl.store(out_ptr + pid, tl.sum(acc, axis=0))

    _kernels.update(stats=_stats, checksum=_checksum, differ=_differ)
    return _kernels


_tolerances: Dict[Tuple[str, float, float], torch.Tensor] = {}


def _tolerance(dev: torch.device, atol: float, rtol: float) -> torch.Tensor:
    """(atol, rtol) on the device, made once: a copy from the host would
    wait for the device (rechecks of timed calls must not)."""
    key = (str(dev), atol, rtol)
    t = _tolerances.get(key)
    if t is None:
        t = _tolerances[key] = torch.tensor([atol, rtol], dtype=torch.float64, device=dev)
    return t


def _grid(n: int) -> Tuple[int, int]:
    """(programs, span): spans are whole steps and cover n."""
    steps = -(-n // BLOCK)
    programs = min(MAX_PROGRAMS, steps)
    span = -(-steps // programs) * BLOCK
    return -(-n // span), span


def _flat_words(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's bytes as integer words of its element size."""
    d = t.detach().reshape(-1)
    if d.dtype == torch.bool:
        return d.view(torch.int8)
    return d.view(_WORDS[d.element_size()])


def compare_stats(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> Optional[torch.Tensor]:
    """Statistics of out against ref (same shape and dtype, usable), as one
    float64 device tensor of 8 values, not read back: new NaN, bad Inf and
    elements beyond tolerance (counts), the squared norms of the finite
    difference and of the finite reference, the largest |difference|, its
    flat index (the first if several) and the largest |reference|. None where
    the kernel cannot run (the caller then computes them with torch)."""
    if out.dtype not in _FLOATS:
        return None
    try:
        k = _compile()["stats"]
        n = ref.numel()
        programs, span = _grid(n)
        dev = ref.device
        wide64 = torch.float64 in (out.dtype, ref.dtype)
        tol = _tolerance(dev, float(atol), float(rtol))
        cnt = torch.empty((programs, 3), dtype=torch.int64, device=dev)
        sq = torch.empty((programs, 2), dtype=torch.float64, device=dev)
        dmax = torch.empty(programs, dtype=torch.float64, device=dev)
        darg = torch.empty(programs, dtype=torch.int64, device=dev)
        rmax = torch.empty(programs, dtype=torch.float64, device=dev)
        k[(programs,)](out.detach().reshape(-1), ref.detach().reshape(-1), tol, n, span, cnt, sq, dmax, darg, rmax,
                       TOL_ON=bool(atol != 0 or rtol != 0), WIDE64=wide64, BLOCK=BLOCK, num_warps=STATS_WARPS)
        top = dmax.max()
        at = torch.where(dmax == top, darg, torch.full_like(darg, n)).min()
        return torch.cat([cnt.sum(0).double(), sq.sum(0), top.reshape(1), at.double().reshape(1),
                          rmax.max().reshape(1)])
    except Exception as exc:  # noqa: BLE001 - any failure turns the fused path off
        _fail(exc)
        return None


def checksum_blocks(t: torch.Tensor, word: torch.dtype, weights: torch.Tensor) -> Optional[List[int]]:
    """The per-block sums of the keyed checksum (checksum.py): block b's sum
    over its words p of word(p) * weights[p % len(weights)], modulo 2**64 as
    signed values, read back. ``t`` is viewed as ``word``s (contiguous). None
    where the kernel cannot run."""
    try:
        k = _compile()["checksum"]
        words = t.detach().reshape(-1).view(word)
        n = words.numel()
        chunk = weights.numel()
        blocks = -(-n // chunk)
        span = -(-(-(-chunk // CHECKSUM_SPLIT)) // BLOCK) * BLOCK
        parts = torch.empty((blocks, CHECKSUM_SPLIT), dtype=torch.int64, device=t.device)
        k[(blocks, CHECKSUM_SPLIT)](words, weights, n, chunk, span, parts, SPLIT=CHECKSUM_SPLIT, BLOCK=BLOCK,
                                    num_warps=WARPS)
        mask = (1 << 64) - 1
        sums: List[int] = []
        for row in parts.tolist():
            total = sum(v & mask for v in row) & mask
            sums.append(total - (1 << 64) if total >> 63 else total)
        return sums
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return None


def count_differing(a: torch.Tensor, b: torch.Tensor) -> Optional[torch.Tensor]:
    """How many elements of a and b (same shape, dtype, usable) differ bit for
    bit, as a device tensor not read back; None where the kernel cannot run."""
    try:
        k = _compile()["differ"]
        wa, wb = _flat_words(a), _flat_words(b)
        n = wa.numel()
        programs, span = _grid(n)
        out = torch.empty(programs, dtype=torch.int64, device=a.device)
        k[(programs,)](wa, wb, n, span, out, BLOCK=BLOCK, num_warps=WARPS)
        return out.sum()
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return None

