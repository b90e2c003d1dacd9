"""Triton launchers built by the judge for the runners that follow.

Each runner has a private Triton cache, so each builds, with the C compiler,
the launcher of every kernel signature it launches (the C stub that passes a
launch's arguments to the driver; about 0.13 s each on a CPU core), although
the kernels of one run (a tune run's variants, an LLM's rewrites) mostly share
their signatures. After a candidate passes verification the judge asks its
runner which signatures it launched (``launch_signatures``: claims, typed
strings only), builds the launchers of new ones itself from Triton's own
generator (``make_launcher``: the C source follows from the argument types
alone), and hands every launcher built so far to each new runner as sealed
memory files with its ``load`` or ``usertest`` request; the runner writes them
into its cache before any candidate code runs. Triton finds a launcher there
only under the hash of the source it generates itself, so a launcher is used
only by a kernel whose signature gives exactly that source.

A candidate can at most make the judge build launchers for signatures it
names: at most NEW_PER_CANDIDATE a candidate, MAX_SEEDS in all, each of at
most MAX_ARGS arguments of the types Triton's NVIDIA backend knows. NVIDIA
only; any failure leaves the runners to build their own.
"""

from __future__ import annotations

import os
import re
import sysconfig
from typing import Any, Dict, List, Optional, Sequence, Tuple

MAX_SEEDS = 32
# KAGENT_TRITON_SEEDS=0 turns seeding off: no launcher is recorded, built or
# sent, and the fork server builds no C helper module (launches.py).
SWITCH = "KAGENT_TRITON_SEEDS"
NEW_PER_CANDIDATE = 4
MAX_ARGS = 64
LAUNCHER = "__triton_launcher"
_TYPE = re.compile(r"^(\*k?)?(i1|i8|i16|i32|i64|u1|u8|u16|u32|u64|fp8e4nv|fp8e5|fp8e4b15|fp8e4b8|fp8e5b16|fp16|bf16|"
                   r"fp32|fp64)$|^constexpr$")

_seeds: Dict[str, Tuple[str, str, bytes]] = {}
_failed: List[str] = []


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def valid(sig: Any) -> bool:
    """A flat list of Triton type names (what ``launch_signatures`` may claim)."""
    return (isinstance(sig, list) and 0 < len(sig) <= MAX_ARGS
            and all(isinstance(t, str) and _TYPE.match(t) for t in sig))


def _build(sig: Sequence[str]) -> Optional[Tuple[str, str, bytes]]:
    from triton.backends.nvidia import driver as nv

    from .launches import build_module, cache_key

    src = nv.make_launcher({}, {i: t for i, t in enumerate(sig)}, None)
    if cache_key(src) in _seeds:
        return None
    return build_module(LAUNCHER, src)


def learn(signatures: Any) -> int:
    """Build the launchers of claimed signatures not built yet; returns how
    many were built."""
    if _failed or not enabled() or not isinstance(signatures, list):
        return 0
    built = 0
    for sig in signatures[:MAX_ARGS]:
        if built >= NEW_PER_CANDIDATE or len(_seeds) >= MAX_SEEDS:
            break
        if not valid(sig):
            continue
        try:
            seed = _build(sig)
        except Exception as exc:  # noqa: BLE001 - no compiler, another Triton: the runners build their own
            _failed.append(f"{type(exc).__name__}: {exc}"[:300])
            return built
        if seed is not None:
            _seeds[seed[0]] = seed
            built += 1
    return built


def seeds() -> List[Tuple[str, str, bytes]]:
    return list(_seeds.values())


def to_fds(items: Sequence[Tuple[str, str, bytes]]) -> Tuple[List[Dict[str, str]], List[int]]:
    """The seeds as sealed memory files to send with a request: (their
    descriptions, their descriptors; the caller closes them)."""
    specs: List[Dict[str, str]] = []
    fds: List[int] = []
    if not hasattr(os, "memfd_create"):
        return specs, fds
    try:
        import fcntl

        for key, name, data in items:
            fd = os.memfd_create("kagent-launcher", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            fds.append(fd)
            os.write(fd, data)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
                        | fcntl.F_SEAL_SEAL)
            specs.append({"key": key, "name": name})
    except (OSError, AttributeError):
        for fd in fds:
            os.close(fd)
        return [], []
    return specs, fds


def from_fds(specs: Any, fds: Sequence[int]) -> int:
    """In a runner, before candidate code: the seeds of a request into this
    process's Triton cache. Returns how many were written. The descriptors
    stay open (the request's owner closes them)."""
    from .launches import seed_cache

    if not enabled() or not isinstance(specs, list) or len(specs) != len(fds):
        return 0
    want = LAUNCHER + sysconfig.get_config_var("EXT_SUFFIX")
    done = 0
    for spec, fd in zip(specs, fds):
        if not isinstance(spec, dict) or spec.get("name") != want:
            continue
        key = str(spec.get("key") or "")
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            continue
        try:
            size = os.fstat(fd).st_size
            if not 0 < size <= 16 << 20:
                continue
            data = os.pread(fd, size, 0)
        except OSError:
            continue
        seed_cache((key, want, data))
        done += 1
    return done
