"""Keyed, bit-exact checksums of tensors, computed on the tensors' device.

A checksum stands in for a full copy wherever a check only needs to know
whether a tensor's contents changed (the problem's stored inputs and reference
outputs, which every candidate call could reach). It reads the exact bit
pattern: each tensor's bytes as 32-bit words (16- or 8-bit words for 2- and
1-byte dtypes), sign-extended to int64, multiplied by per-position random odd
64-bit weights (by position within a block of ``chunks.CHUNK`` words) and
summed with wrap-around (mod 2**64); the block sums are combined on the host
with per-block random odd multipliers.
NaN payloads, signed zeros and every other bit count.

The weights are drawn from ``os.urandom`` when the module is imported, so a
change cannot be tuned to keep the checksum without reading the worker's
memory: a given change of the contents goes unnoticed with probability at most
about 2**-32 (a single changed word never). Cost: one host synchronisation per
tensor; temporaries of one int64 piece (``chunks.CHUNK`` words) plus the cached
weights (as much again, once per device). Large tensors on an NVIDIA GPU take
one fused kernel instead of the pieces (fused.py), with the same result.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Tuple

import torch

from . import fused
from .chunks import CHUNK, flat_chunks
from .device import tensors_in

_MASK = (1 << 64) - 1
_KEY = int.from_bytes(os.urandom(8), "little")
_WORD = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int32}
_weights: Dict[str, torch.Tensor] = {}


def _mix(x: int) -> int:
    """splitmix64: a well-spread 64-bit value for each piece index."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _weights_on(device: torch.device) -> torch.Tensor:
    key = str(device)
    w = _weights.get(key)
    if w is None:
        gen = torch.Generator()
        gen.manual_seed(_KEY & ((1 << 63) - 1))
        w = torch.randint(-(1 << 62), 1 << 62, (CHUNK,), dtype=torch.int64, generator=gen)
        w = (w * 2 + 1).to(device)  # odd: no single changed word can vanish
        _weights[key] = w
    return w


def prepare(device: torch.device) -> None:
    """Allocate the device's weights now: before a problem's large tensors, so
    that this long-lived allocation gets a segment of its own instead of
    splitting a large cached block that a later input copy needs whole."""
    _weights_on(device)


def _words(t: torch.Tensor) -> Tuple[torch.Tensor, torch.dtype]:
    """The tensor as a real or integer tensor, and the word dtype its bytes are read as."""
    d = t.detach()
    if d.is_complex():
        d = torch.view_as_real(d)
    word = torch.int8 if d.dtype == torch.bool else _WORD.get(d.element_size())
    if word is None:
        raise TypeError(f"no checksum for dtype {d.dtype}")
    return d, word


def tensor_checksum(t: torch.Tensor) -> Tuple[Any, ...]:
    """(dtype, shape, checksum) of one tensor."""
    head = (str(t.dtype), tuple(t.shape))
    if t.numel() == 0 or t.device.type == "meta":
        return head + (0,)
    d, word = _words(t)
    weights = _weights_on(d.device)
    if d.numel() >= fused.CHECKSUM_MIN_ELEMENTS and fused.usable(d):
        block_sums = fused.checksum_blocks(d, word, weights)
        if block_sums is not None:
            return head + (_combine(enumerate(block_sums)),)
    per = max(1, d.element_size() // 4)  # words per element
    sums: List[torch.Tensor] = []
    blocks: List[int] = []
    with torch.no_grad():
        # Word p of the tensor (row-major) gets weight W[p % CHUNK] and its block
        # p // CHUNK a multiplier, wherever the pieces happen to be cut.
        for offset, piece in flat_chunks(d, CHUNK // per):
            w = piece if piece.dtype == word else piece.view(word)
            pos = offset * per
            done = 0
            while done < w.numel():
                at = (pos + done) % CHUNK
                n = min(w.numel() - done, CHUNK - at)
                wide = w[done : done + n].to(torch.int64)
                wide.mul_(weights[at : at + n])
                sums.append(wide.sum())
                blocks.append((pos + done) // CHUNK)
                del wide
                done += n
    if not sums:
        return head + (0,)
    return head + (_combine(zip(blocks, torch.stack(sums).tolist())),)


def _combine(block_sums: Iterable[Tuple[int, int]]) -> int:
    """The checksum from (block, that block's weighted sum) pairs: each block
    with its own odd multiplier, modulo 2**64."""
    total = 0
    for block, s in block_sums:
        total = (total + (int(s) & _MASK) * (_mix(_KEY ^ block) | 1)) & _MASK
    return total


def checksum(obj: Any) -> Tuple[Any, ...]:
    """Checksums of every tensor of a nested structure, in order."""
    out: List[Any] = []
    for t in tensors_in(obj):
        out.append(tensor_checksum(t))
    return tuple(out)
