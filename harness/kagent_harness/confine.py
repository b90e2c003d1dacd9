"""A process that runs candidate code acts on no process but itself.

Every runner of a judge is forked from the same fork server, in the same
sandbox: one PID namespace, one uid. Without more, a candidate's code could
signal its neighbours (stop the best's runner while it is timed, kill the
next candidate's spare or the fork server) or change how the kernel treats
them (their priority, CPU set, resource limits). The static check bans the
Python calls that do so; this is the kernel's own rule behind it, and holds
whatever route the code finds to the system call.

``to_self()`` installs a seccomp filter on every thread of the calling process
(SECCOMP_FILTER_FLAG_TSYNC) that answers EPERM to

- ``kill``, ``tgkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo`` aimed at
  any process but the caller (``kill(0)`` and process groups included);
- ``tkill``, ``pidfd_send_signal``, ``process_madvise``, ``process_mrelease``,
  and ``ptrace``, ``process_vm_readv``, ``process_vm_writev``, ``kcmp``,
  ``pidfd_getfd`` (the sandbox refuses these too; here they are refused to
  unsandboxed runners as well): they reach other processes and nothing here
  needs them;
- ``setpriority``, ``ioprio_set``, ``prlimit64``, ``sched_setaffinity``,
  ``sched_setscheduler``, ``sched_setparam``, ``sched_setattr``,
  ``migrate_pages``, ``move_pages`` on any target but the caller (0 or its
  process id); so a thread other than the main one cannot change its own
  priority or CPU set either;
- ``fcntl(F_SETOWN)`` to another process and ``F_SETOWN_EX``, ``ioctl``
  ``FIOSETOWN`` and ``SIOCSPGRP`` (they direct SIGIO at a chosen process);
- system calls of another ABI (x32, 32-bit) than the process's own.

The filter is fixed to the process id at install time: a child the process
forks may signal its parent but not itself (candidates may not fork). It
stacks on the sandbox's filter and, like it, cannot be removed. The runner
installs it before it imports a candidate (``load``, ``precompile``); the
user test's process installs it before it runs test.py.
"""

from __future__ import annotations

import os
import platform
import struct
from typing import Dict, List, Tuple, Union

# Set by the fork server in the sandbox: a runner that cannot confine itself
# there refuses candidates instead of running them unconfined.
REQUIRED = False

# seccomp(2), prctl(2), classic BPF.
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_PR_SET_NO_NEW_PRIVS = 38
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1
_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_RET = 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARGS = 0, 4, 16

_F_SETOWN, _F_SETOWN_EX = 8, 15
_FIOSETOWN, _SIOCSPGRP = 0x8901, 0x8902
_PRIO_PROCESS, _IOPRIO_WHO_PROCESS = 0, 1

# System call numbers (the kernel's tables; x86_64 and the generic table
# aarch64 uses).
_ARCHES: Dict[str, Dict[str, int]] = {
    "x86_64": {
        "audit": 0xC000003E, "x32": 0x40000000, "seccomp": 317,
        "ioctl": 16, "kill": 62, "fcntl": 72, "rt_sigqueueinfo": 129, "setpriority": 141,
        "sched_setparam": 142, "sched_setscheduler": 144, "tkill": 200, "sched_setaffinity": 203,
        "tgkill": 234, "ioprio_set": 251, "migrate_pages": 256, "move_pages": 279,
        "rt_tgsigqueueinfo": 297, "prlimit64": 302, "sched_setattr": 314,
        "pidfd_send_signal": 424, "process_madvise": 440, "process_mrelease": 448,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438,
    },
    "aarch64": {
        "audit": 0xC00000B7, "x32": 0, "seccomp": 277,
        "fcntl": 25, "ioctl": 29, "ioprio_set": 30, "sched_setparam": 118,
        "sched_setscheduler": 119, "sched_setaffinity": 122, "kill": 129, "tkill": 130,
        "tgkill": 131, "rt_sigqueueinfo": 138, "setpriority": 140, "migrate_pages": 238,
        "move_pages": 239, "rt_tgsigqueueinfo": 240, "prlimit64": 261, "sched_setattr": 274,
        "pidfd_send_signal": 424, "process_madvise": 440, "process_mrelease": 448,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438,
    },
}
_SIGNAL_SELF = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
_TARGET_SELF = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
                "sched_setattr", "migrate_pages", "move_pages")
_REFUSED = ("tkill", "pidfd_send_signal", "process_madvise", "process_mrelease",
            "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd")

# An instruction: (code, jump-if-true label, jump-if-false label, k). A label
# is a str; None falls through.
_Insn = Tuple[int, Union[str, None], Union[str, None], int]


class Unavailable(OSError):
    """The filter cannot be installed here."""


def machine() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def program(pid: int, arch: str) -> List[Tuple[int, int, int, int]]:
    """The filter for process ``pid`` on ``arch`` (x86_64 or aarch64), as
    (code, jt, jf, k) instructions."""
    nr = _ARCHES[arch]
    lo = pid & 0xFFFFFFFF

    def ld(off: int) -> _Insn:
        return (_LD_W_ABS, None, None, off)

    def arg(i: int) -> _Insn:  # an argument's low 32 bits (little-endian)
        return ld(_OFF_ARGS + 8 * i)

    def jeq(k: int, yes: Union[str, None], no: Union[str, None] = None) -> _Insn:
        return (_JEQ, yes, no, k)

    body: List[Union[str, _Insn]] = [
        ld(_OFF_ARCH), jeq(nr["audit"], None, "deny"),
        ld(_OFF_NR),
    ]
    if nr["x32"]:
        body.append((_JGE, "deny", None, nr["x32"]))
    body += [jeq(nr[n], "signal") for n in _SIGNAL_SELF]
    body += [jeq(nr[n], "target") for n in _TARGET_SELF]
    body += [jeq(nr[n], "deny") for n in _REFUSED]
    body += [
        jeq(nr["setpriority"], "prio"), jeq(nr["ioprio_set"], "ioprio"),
        jeq(nr["fcntl"], "fcntl"), jeq(nr["ioctl"], "ioctl"),
        (_RET, None, None, _RET_ALLOW),
        # The first argument is the caller's process id.
        "signal", arg(0), jeq(lo, "allow", "deny"),
        # The first argument is 0 (the caller) or its process id.
        "target", arg(0), jeq(0, "allow"), jeq(lo, "allow", "deny"),
        "prio", arg(0), jeq(_PRIO_PROCESS, None, "deny"), arg(1), jeq(0, "allow"), jeq(lo, "allow", "deny"),
        "ioprio", arg(0), jeq(_IOPRIO_WHO_PROCESS, None, "deny"), arg(1), jeq(0, "allow"),
        jeq(lo, "allow", "deny"),
        "fcntl", arg(1), jeq(_F_SETOWN_EX, "deny"), jeq(_F_SETOWN, None, "allow"),
        arg(2), jeq(0, "allow"), jeq(lo, "allow", "deny"),
        "ioctl", arg(1), jeq(_FIOSETOWN, "deny"), jeq(_SIOCSPGRP, "deny", "allow"),
        "allow", (_RET, None, None, _RET_ALLOW),
        "deny", (_RET, None, None, _RET_EPERM),
    ]
    return _assemble(body)


def _assemble(body: List[Union[str, _Insn]]) -> List[Tuple[int, int, int, int]]:
    labels: Dict[str, int] = {}
    insns: List[_Insn] = []
    for item in body:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)
    out = []
    for i, (code, jt, jf, k) in enumerate(insns):
        def off(label: Union[str, None]) -> int:
            if label is None:
                return 0
            d = labels[label] - (i + 1)
            if not 0 <= d <= 255:  # classic BPF jumps forward only
                raise ValueError(f"jump to {label} out of range")
            return d
        out.append((code, off(jt), off(jf), k))
    return out


def to_self() -> None:
    """Install the filter on every thread of this process; Unavailable when
    the kernel, the architecture or the platform does not allow it."""
    arch = machine()
    if not os.uname().sysname == "Linux" or arch not in _ARCHES:
        raise Unavailable(f"no signal confinement on {os.uname().sysname} {arch}")
    import ctypes

    insns = program(os.getpid(), arch)
    raw = b"".join(struct.pack("=HBBI", *i) for i in insns)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = _Prog(len(insns), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise Unavailable(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    rc = libc.syscall(ctypes.c_long(_ARCHES[arch]["seccomp"]), ctypes.c_long(_SECCOMP_SET_MODE_FILTER),
                      ctypes.c_long(_SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(prog))
    if rc != 0:
        err = ctypes.get_errno() if rc < 0 else 0
        raise Unavailable(err, f"seccomp(SET_MODE_FILTER, TSYNC) returned {rc}"
                          + ("" if rc < 0 else f" (thread {rc} has another filter)"))


_confined = False


def before_candidate() -> None:
    """Confine this process once, before candidate code first runs in it.
    Where REQUIRED, Unavailable is raised; elsewhere (a judge's own runner
    server outside the sandbox) it is said once on stderr and the process
    goes on unconfined."""
    global _confined
    if _confined:
        return
    try:
        to_self()
    except Unavailable as exc:
        if REQUIRED:
            raise
        import sys

        print(f"kagent_harness: candidates run without signal confinement: {exc}", file=sys.stderr)
    _confined = True


def main() -> int:
    """``python -m kagent_harness.confine [--required] SCRIPT [ARG...]``: run
    SCRIPT as ``__main__`` (as ``python SCRIPT`` would, its folder first on
    the path) in this process once it is confined; exit 125 when --required
    and it cannot be."""
    import runpy
    import sys

    args = sys.argv[1:]
    required = bool(args) and args[0] == "--required"
    if required:
        args = args[1:]
    if not args:
        print("usage: python -m kagent_harness.confine [--required] SCRIPT [ARG...]", file=sys.stderr)
        return 2
    global REQUIRED
    REQUIRED = required
    try:
        before_candidate()
    except Unavailable as exc:
        print(f"kagent_harness: cannot confine {args[0]}: {exc}", file=sys.stderr)
        return 125
    sys.argv = list(args)
    sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
    runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
