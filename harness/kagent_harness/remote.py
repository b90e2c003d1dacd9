"""The judge's side of a candidate: a runner process per candidate.

The worker (the judge) never imports a candidate. For each candidate it starts
a runner (runner.py), forked from a fork server that has imported torch and the
harness and never held a problem or a candidate, and speaks to it over a
SOCK_SEQPACKET link. Inputs travel in shared buffers the judge owns (shm.py):
the judge copies a call's inputs in, the runner hands the candidate views of
them, and copies the candidate's outputs into output buffers shaped like the
reference's; the judge snapshots them (clones) as soon as the reply arrives.
Everything the runner replies is a claim: the judge compares the outputs
itself and bounds the runner's timings with its own clocks (remote_timing.py).

A runner that dies, hangs up or breaks the protocol fails the candidate
(``crash``); the judge itself is unaffected and stays trusted.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import weakref
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import failures as F
from .device import Device, tensors_in
from .failures import CheckFailure
from .link import MAX_FDS, Link, LinkClosed, pair
from .shm import Slot, new_slot, dtype_name, span_bytes

CRASH = "crash"
_rng = __import__("random").SystemRandom()
# How long a runner may take to start (fork, device initialisation).
START_TIMEOUT_S = 300.0
# Runner error kinds the judge passes on as the candidate's failure name.
_KINDS = {
    F.IMPORT, F.ENTRY, F.EXCEPTION, F.OOM, F.CUDA_ERROR, F.TAMPER, F.CORRECTNESS, "bad_request", "internal",
    "startup",
}

_local_server: Optional[Tuple[subprocess.Popen, str, int, str]] = None


def _server_address(kind: str) -> Tuple[str, int]:
    """The fork server runners come from: the one this worker was forked from
    (KAGENT_RUNNER_SERVER), else one this process starts for itself (for the
    device kind of its runners: a server that guessed the kind could touch
    the GPU before forking, which breaks CUDA in every runner)."""
    global _local_server
    addr = os.environ.get("KAGENT_RUNNER_SERVER", "")
    if addr:
        path, _, pid = addr.rpartition(":")
        if path and pid.isdigit():
            return path, int(pid)
    if _local_server is not None and _local_server[0].poll() is None and _local_server[3] == kind:
        return _local_server[1], _local_server[2]
    import tempfile

    d = tempfile.mkdtemp(prefix="kagent-runners-")
    path = os.path.join(d, "s")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["KAGENT_DEVICE"] = kind
    env["KAGENT_FORKSERVER_ROLE"] = "runners"  # forks runners only (forkserver.py)

    def child_setup() -> None:
        try:
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001
            pass

    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "kagent_harness.forkserver", path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env, cwd=d,
        preexec_fn=child_setup, close_fds=True,
    )
    line = proc.stdout.readline() if proc.stdout is not None else b""
    if line.strip() != b"ready":
        proc.kill()
        raise CheckFailure(CRASH, "the runner fork server did not start (see the worker's stderr)")
    _local_server = (proc, path, proc.pid, kind)
    return path, proc.pid


class _Server:
    """How this judge asks for runners: a persistent SOCK_SEQPACKET connection
    to a sandboxed fork server (fd KAGENT_RUNNER_FD, from the supervisor), or
    a stream per runner to an unsandboxed one (KAGENT_RUNNER_SERVER, or one
    this process starts)."""

    def __init__(self) -> None:
        self.conn: Optional[socket.socket] = None
        self.exits: Dict[int, Dict[str, Any]] = {}
        fd = os.environ.get("KAGENT_RUNNER_FD", "")
        if fd.isdigit():
            self.conn = socket.socket(fileno=int(fd))

    @property
    def sandboxed(self) -> bool:
        return self.conn is not None

    def _packet(self, timeout: float) -> Dict[str, Any]:
        assert self.conn is not None
        self.conn.settimeout(timeout)
        try:
            data = self.conn.recv(4096)
        finally:
            self.conn.settimeout(None)
        if not data:
            raise CheckFailure(CRASH, "the sandboxed runner server is gone")
        msg = json.loads(data)
        if not isinstance(msg, dict):
            raise ValueError("not an object")
        return msg

    def spawn(self, kind: str, theirs: socket.socket) -> Tuple[int, Any]:
        """Start a runner on ``theirs``; its pid in the server's namespace and
        a handle for its exit status."""
        request = {"role": "runner", "kind": kind, "env": dict(os.environ), "cwd": os.getcwd(), "pgid": os.getpgrp()}
        if self.conn is not None:
            # The sandbox has its own environment, folders and process groups.
            request = {"role": "runner", "kind": kind}
            socket.send_fds(self.conn, [json.dumps(request).encode("utf-8")], [theirs.fileno(), 2])
            while True:
                msg = self._packet(START_TIMEOUT_S)
                if "exit" in msg or "signal" in msg:
                    self.exits[int(msg.get("pid") or 0)] = msg
                    continue
                return int(msg["pid"]), None
        path, server_pid = _server_address(kind)
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[0] != server_pid:
            conn.close()
            raise CheckFailure(CRASH, f"{path} is not served by the runner fork server {server_pid}")
        socket.send_fds(conn, [json.dumps(request).encode("utf-8")], [theirs.fileno(), 2])
        line = conn.makefile("rb").readline(4096)
        try:
            return int(json.loads(line)["pid"]), conn
        except (ValueError, KeyError, TypeError):
            conn.close()
            raise CheckFailure(CRASH, "the runner fork server did not start a runner") from None

    def kill(self, inner_pid: int) -> None:
        if self.conn is not None:
            try:
                self.conn.send(json.dumps({"kill": inner_pid}).encode())
            except OSError:
                pass

    def status(self, inner_pid: int, handle: Any) -> str:
        msg: Dict[str, Any] = {}
        try:
            if handle is not None:
                handle.settimeout(2.0)
                data = handle.makefile("rb").readline(4096)
                msg = json.loads(data) if data else {}
            elif self.conn is not None:
                msg = self.exits.pop(inner_pid, {})
                while not msg:
                    got = self._packet(2.0)
                    if int(got.get("pid") or 0) == inner_pid and ("exit" in got or "signal" in got):
                        msg = got
                    elif "exit" in got or "signal" in got:
                        self.exits[int(got.get("pid") or 0)] = got
        except (OSError, ValueError, CheckFailure):
            return ""
        if "signal" in msg:
            try:
                name = signal.Signals(int(msg["signal"])).name
            except ValueError:
                name = str(msg["signal"])
            return f"killed by {name}"
        if "exit" in msg:
            return f"exited with status {msg['exit']}"
        return ""


_servers: List[_Server] = []


def _server() -> _Server:
    if not _servers:
        _servers.append(_Server())
    return _servers[0]


def sandboxed() -> bool:
    """Whether this judge's runners run in the OS sandbox."""
    return _server().sandboxed


class RunnerClient:
    """One runner process and the shared buffers the judge lent it."""

    def __init__(self, device: Device, wait: bool = True) -> None:
        """Start a runner; with ``wait`` unset its hello is read by the
        first request or ``settle`` (a spare: spare.py)."""
        self.device = device
        mine, theirs = pair()
        # The runner's hello carries its process id as the kernel states it
        # (SCM_CREDENTIALS): the id in this namespace, whatever the runner
        # claims, for reading its CPU time and killing it.
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self._server = _server()
        try:
            self.inner_pid, self._handle = self._server.spawn(device.type, theirs)
        finally:
            theirs.close()
        self.link = Link(mine)
        self.pid = 0
        # A descriptor of the runner's process once it said hello (pidfd):
        # readable when the process has ended (ended()).
        self._pidfd: Optional[int] = None
        self._slots: Dict[Any, Slot] = {}
        # Slots written since the last request: the runner refreshes its
        # device copies of them (GPU) before it runs anything.
        self._dirty: set = set()
        self._next = 1
        self.closed = False
        # Replies still to read: the hello, and requests sent ahead (lend_ahead).
        self._hello = True
        self._ahead = 0
        if wait:
            self.settle()

    def settle(self, timeout: float = START_TIMEOUT_S) -> None:
        """Read the hello and the replies to requests sent ahead, each within
        ``timeout`` seconds; a runner that did not start, or failed or did not
        answer one of them, is closed (CheckFailure)."""
        if self._hello:
            self._hello = False
            try:
                hello, self.pid = self.link.recv_with_sender(timeout=timeout)
            except (LinkClosed, OSError, ValueError):
                hello = {}
            if self.pid > 0 and self._pidfd is None:
                try:
                    self._pidfd = os.pidfd_open(self.pid)
                except (AttributeError, OSError):
                    pass  # no pidfd here: ended() cannot tell
            if "ok" not in hello:
                err = (hello.get("error") or {}).get("message") if isinstance(hello.get("error"), dict) else ""
                self.close()
                raise CheckFailure(CRASH, f"the runner did not start: {err or 'no hello'}")
        while self._ahead:
            self._ahead -= 1
            try:
                reply, extra = self.link.recv(timeout=timeout)
            except (LinkClosed, OSError, ValueError):
                reply, extra = {}, []
            for fd in extra:
                os.close(fd)
            if "ok" not in reply:
                self.close()
                raise CheckFailure(CRASH, "the runner failed a request sent ahead (its device context or the "
                                          "buffers lent to it)")

    def lend_ahead(self, layout: Dict[Any, int]) -> bool:
        """Lend device buffers of ``layout`` (slot key -> bytes) now, without
        waiting for the runner's reply (read by ``settle``). False where one
        cannot be made without making room (nothing is then lent)."""
        from .shm import device_slot

        made: Dict[Any, Slot] = {}
        for key, nbytes in layout.items():
            s = device_slot(self._next, nbytes)
            if s is None:
                for m in made.values():
                    m.close()
                return False
            self._next += 1
            made[key] = s
        # One message per MAX_FDS descriptors (the link's limit), each
        # answered in turn.
        messages: List[Tuple[List[Dict[str, Any]], List[int]]] = [([], [])]
        for s in made.values():
            d, f = s.describe()
            if len(messages[-1][1]) + len(f) > MAX_FDS:
                messages.append(([], []))
            messages[-1][0].append(d)
            messages[-1][1].extend(f)
        try:
            for descs, fds in messages:
                self.link.send({"op": "slots", "slots": descs, "drop": []}, fds)
                self._ahead += 1
        except (LinkClosed, OSError):
            for m in made.values():
                m.close()
            self.close()
            return False
        self._slots.update(made)
        return True

    def ask_ahead(self, op: str) -> bool:
        """Send ``op`` now without waiting for the reply (read by ``settle``);
        False where the runner is gone."""
        try:
            self.link.send({"op": op})
        except (LinkClosed, OSError):
            self.close()
            return False
        self._ahead += 1
        return True

    def layout(self) -> Dict[Any, int]:
        """The buffers lent to this runner: slot key -> bytes."""
        return {key: s.nbytes for key, s in self._slots.items()}

    # -- requests --

    def request(self, op: str, payload: Optional[Dict[str, Any]] = None, fds: Optional[List[int]] = None,
                what: str = "") -> Dict[str, Any]:
        if self.closed:
            raise CheckFailure(CRASH, "the candidate's runner is gone")
        self.settle()
        msg = dict(payload or {})
        msg["op"] = op
        if self._dirty and op != "slots":
            msg["dirty"] = sorted(self._dirty)
            self._dirty.clear()
        # The judge's copies into the slots (from its device) must be
        # complete before the runner reads them.
        self.device.synchronize()
        try:
            self.link.send(msg, fds)
            reply, extra = self.link.recv()
        except (LinkClosed, OSError) as exc:
            status = self._ended()
            raise CheckFailure(CRASH, f"{what or 'the candidate'}: the candidate's process died "
                               f"({status or exc})") from None
        except ValueError as exc:
            self.close()
            raise CheckFailure(CRASH, f"{what or 'the candidate'}: the candidate's process broke the protocol "
                               f"({exc})") from None
        for fd in extra:
            os.close(fd)
        if "ok" in reply and isinstance(reply["ok"], dict):
            return reply["ok"]
        err = reply.get("error")
        if not isinstance(err, dict):
            self.close()
            raise CheckFailure(CRASH, f"{what or 'the candidate'}: the candidate's process sent a malformed reply")
        kind = str(err.get("kind") or "")
        message = str(err.get("message") or "")[:2000]
        if kind not in _KINDS:
            kind = F.EXCEPTION
        if kind == "internal" and F.classify(RuntimeError(message))[0] == F.OOM:
            # The runner's own copies did not fit the device: an oom (the
            # worker closes other kept runners and tries again), not a crash.
            self.close()
            raise CheckFailure(F.OOM, f"{what or 'the candidate'}: the runner ran out of device memory: {message}")
        if kind in ("bad_request", "internal", "startup"):
            self.close()
            raise CheckFailure(CRASH, f"the runner failed: {message}")
        if kind in (F.TAMPER, F.CUDA_ERROR):
            # The runner exits after these; the judge's own process is intact.
            self.close()
        return_kind = kind
        raise CheckFailure(return_kind, message, False)

    def _ended(self) -> str:
        self.closed = True
        self._kill()
        return self._server.status(self.inner_pid, self._handle)

    def _kill(self) -> None:
        self._server.kill(self.inner_pid)
        # Before its hello the runner's own id is unknown; outside the sandbox
        # the server's id for it is this namespace's.
        pid = self.pid if self.pid > 0 else (self.inner_pid if not self._server.sandboxed else 0)
        if pid > 0:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def __del__(self) -> None:
        try:
            self.close()
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def ended(self, timeout: float) -> bool:
        """After close: wait up to ``timeout`` seconds for the runner's
        process to end (the device memory it held goes back to the driver as
        it does); whether it has. False where that cannot be known."""
        fd = self._pidfd
        if fd is None or not self.closed:
            return False
        import select

        ready, _, _ = select.select([fd], [], [], max(0.0, timeout))
        return bool(ready)

    def close(self) -> None:
        if getattr(self, "_closing", False) or not hasattr(self, "link"):
            return
        self._closing = True
        self.closed = True
        try:
            self.link.send({"op": "exit"})
        except (LinkClosed, OSError, ValueError):
            pass
        self.link.close()
        self._kill()
        if self._handle is not None:
            try:
                self._handle.close()
            except OSError:
                pass
        for slot in self._slots.values():
            slot.close()
        self._slots.clear()

    # -- shared buffers --

    def slot(self, key: Any, nbytes: int) -> Slot:
        """The slot for ``key``, of at least nbytes, lent to the runner."""
        s = self._slots.get(key)
        if s is not None and s.nbytes >= nbytes:
            return s
        new = new_slot(self._next, nbytes, self.device.is_cuda)
        self._next += 1
        desc, fds = new.describe()
        drop = [s.id] if s is not None else []
        self.request("slots", {"slots": [desc], "drop": drop}, fds)
        if s is not None:
            s.close()
        self._slots[key] = new
        return new

    def put(self, key: Any, t: torch.Tensor) -> Dict[str, Any]:
        """Copy a judge tensor into its slot; the runner's view of it."""
        shape = tuple(t.shape)
        stride = tuple(t.stride()) if _dense(t) else _contiguous_stride(shape)
        nbytes = span_bytes(shape, stride, t.element_size())
        s = self.slot(key, nbytes)
        view = s.view(shape, stride, t.dtype)
        with torch.no_grad():
            view.copy_(t)
        if view.device.type != "cpu":
            # The runner reads it from its own stream: the copy must be done.
            self.device.synchronize()
        self._dirty.add(s.id)
        return {"slot": s.id, "shape": list(shape), "stride": list(stride), "dtype": dtype_name(t.dtype)}

    def host(self, spec: Dict[str, Any]) -> torch.Tensor:
        """The slot's memory itself (host)."""
        from .shm import dtype_of

        for s in self._slots.values():
            if s.id == spec["slot"]:
                return s.view(tuple(spec["shape"]), tuple(spec["stride"]), dtype_of(spec["dtype"]))
        raise KeyError(spec["slot"])

    def view(self, spec: Dict[str, Any]) -> torch.Tensor:
        """What a slot holds, on the judge's device (a copy there; the slot
        itself on the CPU)."""
        t = self.host(spec)
        if t.device.type != "cpu":
            return t.clone()  # a device slot: a snapshot the runner cannot reach
        if self.device.torch_device.type != "cpu":
            return t.to(self.device.torch_device)
        return t

    def out_specs(self, prefix: Any, like: Any) -> List[Dict[str, Any]]:
        """Output slots shaped like the reference's tensors (contiguous)."""
        specs = []
        for k, r in enumerate(tensors_in(like)):
            shape = tuple(r.shape)
            stride = _contiguous_stride(shape)
            s = self.slot((prefix, "out", k), span_bytes(shape, stride, r.element_size()))
            specs.append({"slot": s.id, "shape": list(shape), "stride": list(stride), "dtype": dtype_name(r.dtype)})
        return specs

    def args(self, prefix: Any, values: List[Any]) -> List[Any]:
        return [_arg(self, (prefix, "in", i), v) for i, v in enumerate(values)]

    def poison_outputs(self, specs: List[Dict[str, Any]]) -> None:
        """Poison the output slots, so that an output the runner did not
        write shows. Large slots get a random sample of their elements
        (POISON_SAMPLE, at random positions chosen per call, and the first
        and last): a runner that leaves a slot unwritten leaves the sample
        poisoned, and filling gigabytes on the host per call is not spent."""
        from .poison import fill_poison

        for spec in specs:
            t = self.host(spec)
            n = t.numel()
            if n * t.element_size() < POISON_WHOLE_BYTES or not t.is_contiguous() or t.device.type != "cpu":
                fill_poison(t)
                continue
            flat = t.view(-1)
            idx = torch.randint(0, n, (POISON_SAMPLE,), generator=_poison_rng())
            idx = torch.cat([idx, torch.tensor([0, n - 1])])
            fill_poison(flat[:1])
            flat.index_fill_(0, idx, flat[0].item())

    def outputs(self, meta: Dict[str, Any], specs: List[Dict[str, Any]]) -> Any:
        """The candidate's outputs as judge tensors (snapshots of the slots)."""
        return _rebuild(self, meta, specs, 0)


# Output slots of at least POISON_WHOLE_BYTES are poisoned on a sample of
# POISON_SAMPLE elements (RemoteCandidate.poison_outputs).
POISON_WHOLE_BYTES = 64 << 20
POISON_SAMPLE = 1 << 16
_poison_gen: List[torch.Generator] = []


def _poison_rng() -> torch.Generator:
    """A generator seeded from the OS, apart from the global RNGs (whose
    states the problem's draws depend on)."""
    if not _poison_gen:
        g = torch.Generator()
        g.manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        _poison_gen.append(g)
    return _poison_gen[0]


def _dense(t: torch.Tensor) -> bool:
    if t.is_contiguous():
        return True
    if any(st <= 0 for st in t.stride()) or t.numel() == 0:
        return False
    return span_bytes(tuple(t.shape), tuple(t.stride()), 1) == t.numel()


def _contiguous_stride(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    stride: List[int] = []
    acc = 1
    for n in reversed(shape):
        stride.append(acc)
        acc *= max(1, n)
    return tuple(reversed(stride))


def _arg(rc: RunnerClient, key: Any, v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return {"t": rc.put(key, v.detach())}
    if v is None or isinstance(v, (bool, int, float, str)):
        return {"v": v}
    if isinstance(v, (list, tuple)):
        return {"seq": [_arg(rc, (key, j), x) for j, x in enumerate(v)], "tuple": isinstance(v, tuple)}
    if isinstance(v, torch.dtype):
        raise CheckFailure(CRASH, "an input of the problem is a torch.dtype, which cannot be passed to the runner")
    raise CheckFailure(CRASH, f"an input of the problem is a {type(v).__name__}, which cannot be passed to the runner")


def _rebuild(rc: RunnerClient, meta: Any, specs: List[Dict[str, Any]], depth: int) -> Any:
    from .shm import dtype_of

    if depth > 16 or not isinstance(meta, dict):
        raise CheckFailure(F.CORRECTNESS, "the output structure is too deep or malformed")
    kind = meta.get("kind")
    if kind == "none":
        return None
    if kind == "value":
        v = meta.get("v")
        return v if isinstance(v, (bool, int, float)) else float("nan")
    if kind == "seq":
        items = [_rebuild(rc, m, specs, depth + 1) for m in (meta.get("items") or [])[:4096]]
        return tuple(items) if meta.get("tuple") else items
    if kind == "tensor":
        i = meta.get("i")
        shape = [int(x) for x in (meta.get("shape") or [])][:64]
        if not meta.get("plain"):
            raise CheckFailure(F.CORRECTNESS, "an output is a torch.Tensor subclass; return a plain torch.Tensor")
        if meta.get("copied") and isinstance(i, int) and 0 <= i < len(specs):
            # A snapshot: on a GPU the view is already a copy on the device.
            v = rc.view(specs[i])
            return v.clone() if v.device.type == "cpu" else v
        try:
            dtype = dtype_of(str(meta.get("dtype")))
        except ValueError:
            raise CheckFailure(F.CORRECTNESS, "an output has an unsupported dtype") from None
        dev = str(meta.get("device"))
        if dev != rc.device.torch_device.type:
            raise CheckFailure(F.CORRECTNESS, f"an output is on {dev[:20]}, expected {rc.device.torch_device.type}")
        # Not copied: its shape or dtype differs from the reference's, or there
        # are more outputs than the reference has. A stand-in with the shape
        # and dtype lets the comparison say which.
        return torch.empty(shape, dtype=dtype, device="meta")
    raise CheckFailure(F.CORRECTNESS, f"an output is a {str(meta.get('type'))[:40]}, not a tensor")


class RemoteCallable:
    """The candidate's callable for one shape set, in its runner."""

    def __init__(self, rc: RunnerClient, label: str, like: Any, sets: int) -> None:
        self.rc = rc
        self.label = label
        # Input buffer sets, shared by verification and timing (problem.sets).
        self.sets = max(1, sets)
        self.like = like  # the reference outputs: their shapes size the output slots
        self._slot_of: Dict[int, Tuple[Any, int]] = {}  # judge tensor id -> (weakref, buffer set)
        # Addresses of the outputs the runner keeps alive (see runner.op_call):
        # one returned again means the kernel hands out the same buffer.
        self.kept_ptrs: set = set()
        self.reused_buffer = False

    def release(self) -> None:
        """Let the runner free the verification outputs it keeps."""
        self.kept_ptrs.clear()
        self.rc.request("release", {}, what="releasing outputs")

    def invoke(self, inputs: List[Any], poison: bool, like: Any, counter: Any, what: str) -> Any:
        rc = self.rc
        # The runner sees the same buffers for verification as for timing (a
        # kernel cannot tell the two apart by address); the same judge tensors
        # passed again land in the same buffers (the caching check refills
        # them in place).
        first = next(iter(tensors_in(inputs)), None)
        seen = self._slot_of.get(id(first)) if first is not None else None
        if seen is not None and seen[0]() is first:
            j = seen[1]
        else:
            j = _rng.randrange(self.sets)
            if first is not None:
                self._slot_of = {k: v for k, v in self._slot_of.items() if v[0]() is not None}
                self._slot_of[id(first)] = (weakref.ref(first), j)
        args = rc.args(("t", self.label, j), inputs)
        specs = rc.out_specs(("t", self.label), self.like)
        rc.poison_outputs(specs)
        sizes = [t.numel() * t.element_size() for t in tensors_in(like)] if like is not None else []
        reply = rc.request("call", {"label": self.label, "args": args, "out": specs, "poison": poison,
                                    "like": sizes, "count": counter is not None, "what": what, "keep": True},
                           what=what)
        out = rc.outputs(reply.get("out"), specs)
        ptrs = [p for p in reply.get("ptrs") or [] if isinstance(p, int) and p]
        if any(p in self.kept_ptrs for p in ptrs):
            self.reused_buffer = True
        self.kept_ptrs.update(ptrs)
        # In-place writes reach the judge's copies, as if the call had been local.
        with torch.no_grad():
            for t, a in zip(inputs, args):
                if isinstance(t, torch.Tensor) and "t" in a:
                    t.copy_(rc.view(a["t"]))
        if counter is not None:
            n = reply.get("launches")
            counter.hook_count = int(n) if isinstance(n, int) and n >= 0 else 0
        return out

    def __call__(self, *inputs: Any) -> Any:
        return self.invoke(list(inputs), False, None, None, "the call")

    def fingerprint(self, inputs: List[Any]) -> Dict[str, Any]:
        """The runner's code fingerprint of one call on inputs (ttir.py)."""
        args = self.rc.args(("t", self.label, 0), inputs)
        return self.rc.request("fingerprint", {"label": self.label, "args": args}, what="the fingerprint call")


class RemoteCandidate:
    """A candidate loaded in its own runner process (the judge's Candidate)."""

    def __init__(self, problem: Any, path: str, source: str, entry: str, rc: RunnerClient) -> None:
        from .candidate import source_hash

        self.path = path
        self.source = source
        self.sha256 = source_hash(source)
        self.entry = entry
        self.problem = problem
        self.rc = rc
        self.module = None
        self._callables: Dict[str, RemoteCallable] = {}
        # What verification found, for timing (see Candidate).
        self.verified_sums: Optional[Dict[int, Any]] = None
        self.precision_bound: Any = None

    def user_test(self, test_path: str, problem_path: str, timeout_s: float) -> Tuple[bool, str]:
        """The kernel dir's test.py on this candidate, in a runner of its own
        (runner.py, ``usertest``): the test imports the candidate, so it runs
        in the sandbox too. (passed, one-line reason)."""
        from .failures import one_line
        from .usertest import _read

        rc = RunnerClient(self.rc.device)
        try:
            reply = rc.request("usertest", {"test": _read(test_path), "kernel": self.source,
                                            "problem": _read(problem_path), "timeout_s": timeout_s},
                               what="the user test")
        finally:
            rc.close()
        return reply.get("passed") is True, one_line(str(reply.get("reason") or ""))[:2000]

    def callable_for(self, shape_set: Any) -> RemoteCallable:
        fn = self._callables.get(shape_set.label)
        if fn is not None:
            return fn
        rc = self.rc
        init = rc.args(("init", shape_set.label), list(shape_set.init_inputs))
        weights = []
        if self.entry == "ModelNew":
            for name, t in shape_set.model.state_dict().items():
                weights.append({"name": name, "t": rc.put(("w", shape_set.label, name), t.detach())})
        rc.request("build", {"label": shape_set.label, "init": init, "weights": weights},
                   what=f"building the candidate for shape {shape_set.label}")
        fn = RemoteCallable(rc, shape_set.label, shape_set.draws[0].ref if shape_set.draws else None,
                            self.problem.sets)
        self._callables[shape_set.label] = fn
        return fn

    def fingerprint(self, shape_set: Any) -> Dict[str, Any]:
        """See Candidate.fingerprint: computed in the runner."""
        inputs = list(shape_set.draws[0].inputs) if shape_set.draws else []
        return self.callable_for(shape_set).fingerprint(inputs)

    def slot_bytes(self) -> int:
        """Host memory of the buffers shared with this candidate's runner."""
        return sum(slot.nbytes for slot in self.rc._slots.values())

    def close(self) -> None:
        self.rc.close()


def load_remote(problem: Any, path: str, source: str, entry: str, require_triton: bool,
                ahead: bool = False) -> RemoteCandidate:
    """Start a runner (or take the problem's spare, spare.py), import the
    candidate there and find its entry point. With ``ahead`` (a
    verification, never a timing) the next candidate's spare starts once
    this one is imported (spare.start_spare)."""
    # The device memory this judge's allocator keeps cached (from baselines
    # and earlier candidates) goes back to the device for the runner.
    problem.device.empty_cache()
    request = {"source": source, "name": os.path.basename(path), "entry": entry, "require_triton": require_triton,
               "tf32": problem.tf32, "dtype": dtype_name(problem.dtype) if problem.dtype is not None else ""}
    what = f"importing {os.path.basename(path)}"
    spare = getattr(problem, "spare", None)
    rc = spare.take() if spare is not None else None
    reply = None
    if rc is not None:
        try:
            reply = rc.request("load", request, what=what)
        except BaseException as exc:
            rc.close()
            if not isinstance(exc, CheckFailure) or exc.name != F.CRASH:
                raise
            # The spare's process died, perhaps killed by another process of
            # the sandbox while it waited: the candidate is loaded again in a
            # runner started for it, so that only its own crash fails it.
    if reply is None:
        rc = RunnerClient(problem.device)
        try:
            reply = rc.request("load", request, what=what)
        except BaseException:
            rc.close()
            raise
    cand = RemoteCandidate(problem, path, source, str(reply.get("entry") or ""), rc)
    if ahead:
        from .spare import start_spare

        start_spare(problem, cand)
    return cand


def runner_cpu_seconds(pid: int) -> Optional[float]:
    """CPU time (user + system, all threads) the kernel has charged to a
    process: a clock the runner cannot set."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
        fields = data[data.rindex(")") + 2:].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks
    except (OSError, ValueError, IndexError):
        return None


def wall() -> float:
    from .device import perf_counter

    return perf_counter()
