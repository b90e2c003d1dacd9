"""JSON lines over private copies of the worker's stdin and stdout.

At start-up the worker takes fd 0 and fd 1 for itself (``os.dup``), points fd 1
at fd 2 and fd 0 at /dev/null. Anything a candidate prints therefore lands on
stderr, and nothing a candidate reads can consume a request. The private
descriptors are not inheritable, so subprocesses (the user test) never see them.
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Dict, Optional

MAX_REQUEST_BYTES = 64 << 20


class ProtocolError(Exception):
    """A request line is not a JSON object."""


class Channel:
    """The worker's end of the protocol."""

    def __init__(self, in_fd: int = 0, out_fd: int = 1, err_fd: int = 2) -> None:
        sys.stdout.flush()
        self._out = os.dup(out_fd)
        self._in = os.dup(in_fd)
        os.dup2(err_fd, out_fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, in_fd)
        os.close(devnull)
        self._reader = os.fdopen(self._in, "rb", buffering=1 << 16)
        # sys.stdout still writes to fd 1, which is now stderr; make it unbuffered
        # enough that candidate prints interleave sensibly with our logs.
        try:
            sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
        except (AttributeError, ValueError):
            pass

    def read(self) -> Optional[Dict[str, Any]]:
        """Next request, or None at end of input. Raises ProtocolError on bad lines."""
        while True:
            line = self._reader.readline(MAX_REQUEST_BYTES)
            if not line:
                return None
            if line.strip():
                break
        if not line.endswith(b"\n") and len(line) >= MAX_REQUEST_BYTES:
            # Drain the rest of the oversized line.
            while True:
                more = self._reader.readline(MAX_REQUEST_BYTES)
                if not more or more.endswith(b"\n"):
                    break
            raise ProtocolError(f"request line longer than {MAX_REQUEST_BYTES} bytes")
        try:
            obj = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"request is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ProtocolError("request is not a JSON object")
        return obj

    def send(self, reply: Dict[str, Any]) -> None:
        """Write one reply line, whole."""
        data = encode(reply)
        view = memoryview(data)
        while view:
            n = os.write(self._out, view)
            view = view[n:]

    def close(self) -> None:
        for fd in (self._out,):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self._reader.close()
        except OSError:
            pass


def sanitize(value: Any) -> Any:
    """Make a value JSON-safe: NaN/Inf become None, tuples become lists,
    unknown objects become their str()."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v) for v in value]
    try:
        as_float = float(value)  # numpy / torch scalars
    except (TypeError, ValueError):
        return str(value)
    return as_float if math.isfinite(as_float) else None


def encode(reply: Dict[str, Any]) -> bytes:
    """One ASCII JSON line terminated by a newline."""
    text = json.dumps(sanitize(reply), allow_nan=False, ensure_ascii=True, separators=(",", ":"))
    return text.encode("ascii") + b"\n"


def ok(req_id: Any, result: Dict[str, Any]) -> Dict[str, Any]:
    return {"id": req_id, "ok": True, "result": result}


def error(
    req_id: Any,
    kind: str,
    message: str,
    fatal: bool = False,
    result: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    reply: Dict[str, Any] = {
        "id": req_id,
        "ok": False,
        "error": {"kind": kind, "message": message, "fatal": fatal},
    }
    if result is not None:
        reply["result"] = result
    return reply
