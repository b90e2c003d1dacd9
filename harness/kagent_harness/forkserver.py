"""A pre-imported Python that forks fresh workers: ``python -m kagent_harness.forkserver SOCKET``.

Importing torch and triton costs seconds of CPU (about 4 s on a laptop core, 4.4 s
on an H200 host); a worker forked from a process that has already imported them
starts in milliseconds. The fork server imports torch, triton and every harness
module once (``worker.prepare``), initialises no device, loads no problem and runs
no candidate; then it listens on a Unix socket (in a directory only its user can
enter) and prints ``ready`` on stdout.

``launch.py`` (a small script that does not import torch) connects for each
worker the supervisor starts. It sends its environment, working directory and
process group with its stdin, stdout and stderr descriptors; the fork server forks
a child that joins the launcher's process group (so the supervisor's group kill
reaches it), takes the three descriptors as 0, 1 and 2, replaces its environment,
and runs the worker exactly as ``python -m kagent_harness.worker`` would after its
imports. The server answers ``{"pid": N}`` and, when the child ends,
``{"exit": CODE}`` or ``{"signal": SIG}``; the launcher exits the same way, so
the supervisor sees the worker's own status.

A child asks the kernel for SIGKILL when the fork server dies; the fork server
itself exits (removing its socket directory) on SIGTERM, on end of stdin, or
when its parent is gone.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import traceback
from typing import Dict, Optional, Tuple

MAX_MESSAGE = 1 << 20


def _log(msg: str) -> None:
    try:
        sys.stderr.write(f"kagent_harness.forkserver: {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _set_pdeathsig() -> None:
    """SIGKILL this process when its parent (the fork server) exits."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort; the supervisor kills the group anyway
        pass


# A runner's oom_score_adj: when the machine runs out of memory, the kernel
# kills the process with the highest badness; a runner (a candidate's code)
# goes first, before its judge or kagent.
RUNNER_OOM_SCORE_ADJ = 1000


def _first_to_die() -> None:
    """Make this process the kernel's first choice when memory runs out
    (raising one's own oom_score_adj needs no privilege)."""
    path = "/proc/self/oom_score_adj"
    try:
        with open(path, encoding="ascii") as f:
            if int(f.read().strip() or 0) >= RUNNER_OOM_SCORE_ADJ:
                return  # inherited (the sandbox sets it for all inside)
        with open(path, "w", encoding="ascii") as f:
            f.write(str(RUNNER_OOM_SCORE_ADJ))
    except (OSError, ValueError) as exc:
        _log(f"cannot raise oom_score_adj: {exc}")


def _child(conn: socket.socket, fds: list, request: Dict[str, object], server: "Server") -> int:
    """Runs in the forked child: become the worker."""
    server.close_in_child()
    _set_pdeathsig()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    pgid = int(request.get("pgid") or 0)
    if pgid > 0:
        try:
            os.setpgid(0, pgid)
        except OSError as exc:
            _log(f"cannot join process group {pgid}: {exc}")
            return 71
    role = str(request.get("role") or "worker")
    if role == "runner":
        _first_to_die()
        # fds: the runner's link to its judge, and the judge's stderr.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(fds[1], 1)
        os.dup2(fds[1], 2)
        link_fd = os.dup(fds[0])
        for fd in fds:
            if fd > 2:
                os.close(fd)
    else:
        # fds: stdin, stdout, stderr, and (with a sandboxed runner server) the
        # judge's connection to it, which becomes fd 3.
        judge_fd = os.dup(fds[3]) if len(fds) > 3 else -1
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        if judge_fd >= 0 and judge_fd != 3:
            os.dup2(judge_fd, 3, inheritable=False)
            os.close(judge_fd)
        elif judge_fd == 3:
            os.set_inheritable(3, False)
    conn.close()
    env = request.get("env")
    if isinstance(env, dict):
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        # tempfile caches the temporary directory of the first call (torch's
        # imports make one in this server): the child's is its own TMPDIR.
        import tempfile

        tempfile.tempdir = None
    cwd = str(request.get("cwd") or "")
    if cwd:
        os.chdir(cwd)
    # Python's own stdio objects still point at the old descriptors' buffers;
    # rebuild them over 0, 1 and 2.
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    if role == "runner":
        import socket as _socket

        from .runner import run

        return run(_socket.socket(fileno=link_fd), server.kind)
    if judge_fd >= 0:
        # Runners come from the sandboxed server at the other end of fd 3.
        os.environ["KAGENT_RUNNER_FD"] = "3"
        os.environ.pop("KAGENT_RUNNER_SERVER", None)
    else:
        # Workers take their candidates' runners from this server.
        os.environ.pop("KAGENT_RUNNER_FD", None)
        os.environ["KAGENT_RUNNER_SERVER"] = f"{server.path}:{server.pid}"
    from .protocol import Channel
    from .worker import serve

    return serve(Channel(), server.kind)


class Server:
    """Forks workers and runners. Requests come from launchers connecting to
    ``path`` (a stream each: one request, the pid, later the exit status), or,
    in descriptor mode (``control``), over judge connections the supervisor
    passes through the control socket (SOCK_SEQPACKET, many requests each;
    every reply names its pid)."""

    def __init__(self, path: str, kind: str, control: Optional[socket.socket] = None) -> None:
        self.path = path
        self.kind = kind
        self.children: Dict[int, Tuple[socket.socket, bool]] = {}  # pid -> (connection, packet mode)
        self.judges: Dict[int, socket.socket] = {}
        self.parent = os.getppid()
        self.pid = os.getpid()
        self.control = control
        self.listener: Optional[socket.socket] = None
        if control is None:
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(path)
            self.listener.listen(64)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: self._wake())
        signal.signal(signal.SIGTERM, lambda *_: self._stop())
        self.stopping = False

    def _wake(self) -> None:
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass

    def _stop(self) -> None:
        self.stopping = True
        self._wake()

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            entry = self.children.pop(pid, None)
            if entry is None:
                continue
            conn, packet = entry
            if os.WIFSIGNALED(status):
                msg = {"signal": os.WTERMSIG(status), "pid": pid}
            else:
                msg = {"exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1, "pid": pid}
            try:
                if packet:
                    conn.send(json.dumps(msg).encode())
                else:
                    conn.sendall((json.dumps(msg) + "\n").encode())
                    conn.close()
            except OSError:
                pass

    def _fork(self, conn: socket.socket, fds: list, request: Dict[str, object], packet: bool) -> None:
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                code = _child(conn, fds, request, self)
            except BaseException:  # noqa: BLE001 - a child never returns into the server loop
                _log(f"child failed:\n{traceback.format_exc()}")
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
                os._exit(code)
        for fd in fds:
            os.close(fd)
        self.children[pid] = (conn, packet)
        try:
            if packet:
                conn.send(json.dumps({"pid": pid}).encode())
            else:
                conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
        except OSError:
            pass

    @staticmethod
    def _request(data: bytes, fds: list) -> Dict[str, object]:
        request = json.loads(data.decode("utf-8"))
        want = 2 if isinstance(request, dict) and request.get("role") == "runner" else 3
        if not isinstance(request, dict) or len(fds) < want:
            raise ValueError(f"a launch request is a JSON object with {want} descriptors")
        return request

    def _accept(self) -> None:
        """Serve one launcher connecting to the socket path."""
        assert self.listener is not None
        conn, _ = self.listener.accept()
        fds: list = []
        try:
            conn.settimeout(10.0)
            data, fds, _flags, _addr = socket.recv_fds(conn, MAX_MESSAGE, 8)
            conn.settimeout(None)
            request = self._request(data, fds)
        except (OSError, ValueError) as exc:
            _log(f"bad launch request: {exc}")
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        self._fork(conn, fds, request, packet=False)

    def _control(self) -> None:
        """A judge connection passed by the supervisor (descriptor mode)."""
        assert self.control is not None
        data, fds, _flags, _addr = socket.recv_fds(self.control, 4096, 8)
        if not data and not fds:
            self.stopping = True  # the supervisor is gone
            return
        for fd in fds:
            conn = socket.socket(fileno=fd)
            self.judges[conn.fileno()] = conn

    def _judge(self, conn: socket.socket) -> None:
        """One request from a judge: start a runner, or kill one of its own."""
        try:
            data, fds, _flags, _addr = socket.recv_fds(conn, MAX_MESSAGE, 8)
        except OSError:
            data, fds = b"", []
        if not data and not fds:
            self.judges.pop(conn.fileno(), None)
            for pid, (c, _) in list(self.children.items()):
                if c is conn:
                    _kill(pid)
            conn.close()
            return
        try:
            request = json.loads(data.decode("utf-8"))
            if isinstance(request, dict) and "kill" in request:
                pid = int(request["kill"])
                entry = self.children.get(pid)
                if entry is not None and entry[0] is conn:
                    _kill(pid)
                for fd in fds:
                    os.close(fd)
                return
            request = self._request(data, fds)
            if request.get("role") != "runner":
                raise ValueError("a judge connection starts runners only")
        except (ValueError, TypeError) as exc:
            _log(f"bad runner request: {exc}")
            for fd in fds:
                os.close(fd)
            return
        self._fork(conn, fds, request, packet=True)

    def serve(self) -> int:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while not self.stopping:
            if os.getppid() != self.parent:
                break
            watch: list = [self.wake_r]
            if self.listener is not None:
                watch += [self.listener, 0]
            if self.control is not None:
                watch.append(self.control)
            watch += list(self.judges.values())
            try:
                ready, _, _ = select.select(watch, [], [], 1.0)
            except InterruptedError:
                continue
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
                self._reap()
            if 0 in ready and not os.read(0, 4096):
                break  # the supervisor closed our stdin
            if self.listener is not None and self.listener in ready:
                self._accept()
            if self.control is not None and self.control in ready:
                self._control()
            for conn in list(self.judges.values()):
                if conn in ready:
                    self._judge(conn)
        return 0

    def close_in_child(self) -> None:
        """Drop what a forked child must not hold: the listener, the control
        socket, the wake-up pipe and the connections of the others."""
        if self.listener is not None:
            self.listener.close()
        if self.control is not None:
            self.control.close()
        os.close(self.wake_r)
        os.close(self.wake_w)
        for conn, _ in self.children.values():
            conn.close()
        for conn in self.judges.values():
            conn.close()
        self.children.clear()
        self.judges.clear()

    def close(self) -> None:
        """Stop listening, remove the server's private directory (the
        supervisor made it for this server alone) and kill the children."""
        import shutil

        if self.listener is not None:
            self.listener.close()
            shutil.rmtree(os.path.dirname(os.path.abspath(self.path)), ignore_errors=True)
        for pid in list(self.children):
            _kill(pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def main() -> int:
    from .worker import stacks_on_sigusr1

    stacks_on_sigusr1()
    if len(sys.argv) == 3 and sys.argv[1] == "--fd":
        path, control = "", socket.socket(fileno=int(sys.argv[2]))
        # The runners' server in the sandbox: neither it nor the runners it
        # forks (which inherit this) can be read or written through /proc by
        # another process of the sandbox.
        try:
            import ctypes

            PR_SET_DUMPABLE = 4
            if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
        except OSError as exc:
            _log(f"cannot make the runner server undumpable: {exc}")
            return 70
        from . import confine

        confine.REQUIRED = True  # a runner that cannot confine itself refuses candidates
    elif len(sys.argv) == 2:
        path, control = sys.argv[1], None
    else:
        _log("usage: python -m kagent_harness.forkserver SOCKET | --fd N")
        return 2
    from .worker import prepare

    try:
        # A runners' server (--fd in the sandbox, or a judge's own): runners
        # need no torch._dynamo.
        runners = control is not None or os.environ.get("KAGENT_FORKSERVER_ROLE") == "runners"
        kind = prepare(os.environ.get("KAGENT_DEVICE", "").strip(), dynamo=not runners)
    except BaseException:  # noqa: BLE001
        _log(f"start-up failed:\n{traceback.format_exc()}")
        return 70
    # Everything imported so far (torch, triton, the harness: millions of
    # objects) lives as long as the server and every child forked from it:
    # out of the cyclic collector's sight, a child's full collections scan
    # only what it made (hundreds of milliseconds less each, which would
    # otherwise land in a timed call or its CPU-time bound) and leave the
    # shared pages unwritten.
    import gc

    gc.freeze()
    server = Server(path, kind, control)
    try:
        return server.serve()
    finally:
        server.close()


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
