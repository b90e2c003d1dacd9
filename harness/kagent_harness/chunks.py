"""Walking large tensors in bounded pieces.

Comparisons and checksums of multi-gigabyte tensors must not allocate
temporaries of the tensors' size: they go through 1-D pieces of at most
``CHUNK`` elements, in row-major order. A contiguous tensor is sliced without
copying; a non-contiguous one (a reference output that is a transposed view,
say) is cut along its leading dimensions and each piece is copied, so at most
``CHUNK`` elements are copied at a time.
"""

from __future__ import annotations

from typing import Iterator, Sequence, Tuple

import torch

# Elements per piece. Comparison temporaries are a few dozen bytes per element
# of a piece (about 150 MiB at this size), independent of the tensors' sizes.
CHUNK = 1 << 22


def _pieces(tensors: Sequence[torch.Tensor], limit: int) -> Iterator[Tuple[torch.Tensor, ...]]:
    first = tensors[0]
    if all(t.is_contiguous() for t in tensors) or first.dim() == 0:
        flat = tuple(t.reshape(-1) for t in tensors)
        n = flat[0].numel()
        for start in range(0, n, limit):
            yield tuple(f[start : start + limit] for f in flat)
        return
    rows = first.shape[0]
    if rows == 0:
        return
    per_row = first.numel() // rows
    if per_row <= limit:
        step = max(1, limit // max(per_row, 1))
        for i in range(0, rows, step):
            yield tuple(t[i : i + step].contiguous().reshape(-1) for t in tensors)
        return
    for i in range(rows):
        yield from _pieces(tuple(t[i] for t in tensors), limit)


def flat_chunks(t: torch.Tensor, limit: int = CHUNK) -> Iterator[Tuple[int, torch.Tensor]]:
    """(offset, piece) for 1-D pieces of ``t`` in row-major order."""
    offset = 0
    for (piece,) in _pieces((t.detach(),), limit):
        yield offset, piece
        offset += piece.numel()


def grouped_chunks(tensors: Sequence[torch.Tensor], limit: int = CHUNK) -> Iterator[Tuple[torch.Tensor, ...]]:
    """Pieces of several tensors of the same shape, cut at the same places."""
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"grouped_chunks: shapes {sorted(list(s) for s in shapes)} differ")
    yield from _pieces(tuple(t.detach() for t in tensors), limit)


def paired_chunks(
    a: torch.Tensor, b: torch.Tensor, limit: int = CHUNK
) -> Iterator[Tuple[int, torch.Tensor, torch.Tensor]]:
    """(offset, piece of a, piece of b) for two tensors of the same shape, cut
    at the same places."""
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"paired_chunks: shapes {list(a.shape)} and {list(b.shape)} differ")
    offset = 0
    for pa, pb in _pieces((a.detach(), b.detach()), limit):
        yield offset, pa, pb
        offset += pa.numel()
