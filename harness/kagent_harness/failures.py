"""Check failures and the classification of exceptions raised by candidates."""

from __future__ import annotations

import re
from typing import Optional, Tuple

# Stable names of the checks. They reach users, the store and the LLM.
STATIC = "static"
IMPORT = "import"
ENTRY = "entry"
TAMPER = "tamper"
CORRECTNESS = "correctness"
PRECISION = "precision"
UNWRITTEN_OUTPUT = "unwritten_output"
INPUT_MUTATION = "input_mutation"
DETERMINISM = "determinism"
TRITON_LAUNCH = "triton_launch"
EXTRA_SHAPES = "extra_shapes"
CACHING = "caching"
USER_TEST = "user_test"
EXCEPTION = "exception"
OOM = "oom"
CUDA_ERROR = "cuda_error"
# Failures found while timing.
RECHECK = "recheck"
HOST_CHECK = "host_check"
UNSEEN_INPUTS = "unseen_inputs"
# The device memory the calls hold kept growing (timing_stats.leak_reason).
MEMORY_LEAK = "memory_leak"
# The times a candidate's process reported disagree with the judge's clocks.
TIMING_FORGED = "timing_forged"
# The candidate's process died or broke the protocol.
CRASH = "crash"
# A verification with a cutoff stopped after a quick timing slower than it
# (quickcut.py): not a check the candidate failed, a variant not worth one.
SLOWER = "slower"

# Failures after which the process must not be trusted any more.
FATAL_KINDS = frozenset({TAMPER, CUDA_ERROR})

MAX_REASON = 600


class CheckFailure(Exception):
    """A candidate failed a named check. ``reason`` is one line for the LLM."""

    def __init__(self, name: str, reason: str, fatal: Optional[bool] = None) -> None:
        super().__init__(reason)
        self.name = name
        self.reason = one_line(reason)
        self.fatal = (name in FATAL_KINDS) if fatal is None else fatal


class RequestError(Exception):
    """A request cannot be served (bad arguments, bad problem file)."""

    def __init__(self, kind: str, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = one_line(message)
        self.fatal = fatal


def one_line(text: str, limit: int = MAX_REASON) -> str:
    """Collapse text to a single line of at most ``limit`` characters."""
    parts = [p.strip() for p in str(text).splitlines()]
    line = " | ".join(p for p in parts if p)
    line = re.sub(r"\s+", " ", line)
    if len(line) > limit:
        line = line[: limit - 3] + "..."
    return line


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    name = type(exc).__name__
    msg = str(exc)
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r})"
    if not msg:
        return name
    return one_line(f"{name}: {msg}")


_CUDA_PATTERNS = (
    "cuda error",
    "illegal memory access",
    "illegal address",
    "device-side assert",
    "unspecified launch failure",
    "misaligned address",
    "cuda_error",
    "hip error",
    "hiperror",
    "an illegal instruction",
    "launch timed out",
    "triton error [cuda]",
    "cudaerror",
    "accelerator error",
)

_OOM_PATTERNS = (
    "out of memory",
    "can't allocate memory",
    "cannot allocate memory",
    "failed to allocate",
)


def classify(exc: BaseException) -> Tuple[str, bool]:
    """Return (check name, fatal) for an exception raised by a candidate.

    MemoryError and allocator failures are ``oom``; CUDA/HIP runtime errors are
    ``cuda_error`` and fatal (they poison the process); everything else,
    SystemExit included, is ``exception``.
    """
    if isinstance(exc, MemoryError):
        return OOM, False
    text = f"{type(exc).__name__}: {exc}".lower()
    if type(exc).__name__ == "OutOfMemoryError":
        return OOM, False
    # Triton's "out of resources: shared memory" is a compile-time limit, not OOM.
    if "outofresources" in text.replace(" ", "") or "out of resources" in text:
        return EXCEPTION, False
    for pat in _CUDA_PATTERNS:
        if pat in text:
            return CUDA_ERROR, True
    for pat in _OOM_PATTERNS:
        if pat in text:
            return OOM, False
    return EXCEPTION, False
