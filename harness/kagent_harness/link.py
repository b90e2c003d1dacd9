"""Messages between the judge and a runner: one JSON object per datagram of a
Unix SOCK_SEQPACKET pair, with descriptors (memfd slots) passed alongside.

Every message the judge reads from a runner is bounded in size and parsed as
JSON only; nothing a runner sends is unpickled or evaluated by the judge.
"""

from __future__ import annotations

import json
import math
import socket
from typing import Any, Dict, List, Optional, Tuple

MAX_MESSAGE = 1 << 20
MAX_FDS = 64


class LinkClosed(Exception):
    """The other end is gone."""


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


class Link:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, 4 * MAX_MESSAGE)
            except OSError:
                pass

    def send(self, obj: Dict[str, Any], fds: Optional[List[int]] = None) -> None:
        data = json.dumps(_clean(obj), separators=(",", ":"), allow_nan=False).encode("utf-8")
        if len(data) > MAX_MESSAGE:
            raise ValueError(f"message of {len(data)} bytes exceeds {MAX_MESSAGE}")
        try:
            if fds:
                socket.send_fds(self.sock, [data], fds)
            else:
                self.sock.send(data)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise LinkClosed(str(exc)) from None

    def recv(self, timeout: Optional[float] = None) -> Tuple[Dict[str, Any], List[int]]:
        self.sock.settimeout(timeout)
        try:
            data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE + 1, MAX_FDS)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise LinkClosed(str(exc)) from None
        finally:
            self.sock.settimeout(None)
        if not data and not fds:
            raise LinkClosed("end of stream")
        if len(data) > MAX_MESSAGE or flags & getattr(socket, "MSG_TRUNC", 0x20):
            for fd in fds:
                _close(fd)
            raise ValueError("message too long")
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            for fd in fds:
                _close(fd)
            raise ValueError("a message is not JSON") from None
        if not isinstance(obj, dict):
            for fd in fds:
                _close(fd)
            raise ValueError("a message is not a JSON object")
        return obj, list(fds)

    def recv_with_sender(self, timeout: Optional[float] = None) -> Tuple[Dict[str, Any], int]:
        """One message and the process id of its sender as the kernel states
        it (SCM_CREDENTIALS, translated into this process's PID namespace;
        SO_PASSCRED must have been set before the message was sent)."""
        import struct

        size = struct.calcsize("3i")
        self.sock.settimeout(timeout)
        try:
            data, ancdata, flags, _ = self.sock.recvmsg(MAX_MESSAGE + 1, socket.CMSG_SPACE(size))
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise LinkClosed(str(exc)) from None
        finally:
            self.sock.settimeout(None)
        if not data:
            raise LinkClosed("end of stream")
        pid = 0
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(payload) >= size:
                pid = struct.unpack("3i", payload[:size])[0]
            elif level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for i in range(0, len(payload) - len(payload) % 4, 4):
                    _close(struct.unpack("i", payload[i:i + 4])[0])
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ValueError("a message is not JSON") from None
        if not isinstance(obj, dict):
            raise ValueError("a message is not a JSON object")
        return obj, pid

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _close(fd: int) -> None:
    import os

    try:
        os.close(fd)
    except OSError:
        pass


def pair() -> Tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
