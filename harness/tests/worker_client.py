"""A small client of the worker protocol for tests (what the Go supervisor does,
in miniature): start ``python3 -m kagent_harness.worker`` in its own process
group, drain stderr into a bounded tail, send requests, read replies with a
timeout, kill the group on hang."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA_DIR = os.path.join(os.path.dirname(HARNESS_DIR), "platform", "worker", "testdata")
STDERR_TAIL = 64 << 10


class WorkerGone(Exception):
    """The worker exited (or closed its protocol pipe) without replying."""


class WorkerTimeout(Exception):
    """No reply within the timeout."""


class WorkerClient:
    def __init__(self, device: str = "cpu", env: Optional[Dict[str, str]] = None, python: str = sys.executable) -> None:
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = HARNESS_DIR + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env["KAGENT_DEVICE"] = device
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(
            [python, "-m", "kagent_harness.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            start_new_session=True,
        )
        self._buf = b""
        self._tail = bytearray()
        self._stderr_bytes = 0
        self._stderr_grew = threading.Condition()
        self._stderr_closed = False
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()
        self._next_id = 1
        self.hello: Dict[str, Any] = {}

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while True:
            chunk = self.proc.stderr.read1(1 << 16) if hasattr(self.proc.stderr, "read1") else self.proc.stderr.read(1 << 16)
            with self._stderr_grew:
                if not chunk:
                    self._stderr_closed = True
                    self._stderr_grew.notify_all()
                    return
                self._stderr_bytes += len(chunk)
                self._tail.extend(chunk)
                if len(self._tail) > STDERR_TAIL:
                    del self._tail[: len(self._tail) - STDERR_TAIL]
                self._stderr_grew.notify_all()

    @property
    def stderr_tail(self) -> str:
        return bytes(self._tail).decode("utf-8", "replace")

    @property
    def stderr_bytes(self) -> int:
        return self._stderr_bytes

    def wait_stderr_bytes(self, n: int, timeout: float = 120.0) -> int:
        """Waits until the drain has read at least n bytes of stderr, the
        stream closes or timeout passes; returns the count read. A reply can
        arrive while what the worker wrote before it is still in the pipe."""
        with self._stderr_grew:
            self._stderr_grew.wait_for(lambda: self._stderr_bytes >= n or self._stderr_closed, timeout)
            return self._stderr_bytes

    def wait_stderr_text(self, text: str, timeout: float = 120.0, count: int = 1) -> str:
        """Waits until the end of stderr (the last STDERR_TAIL bytes) holds
        text (``count`` times), the stream closes or timeout passes; returns
        that end."""
        with self._stderr_grew:
            self._stderr_grew.wait_for(lambda: self._tail.count(text.encode()) >= count or self._stderr_closed,
                                       timeout)
            return bytes(self._tail).decode("utf-8", "replace")

    def start(self, timeout: float = 120.0) -> Dict[str, Any]:
        reply = self.read_reply(timeout)
        if reply.get("id") != 0 or not reply.get("ok"):
            raise RuntimeError(f"bad handshake: {reply}; stderr: {self.stderr_tail[-2000:]}")
        self.hello = reply["result"]
        return self.hello

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerGone("worker stdin closed") from None

    def read_reply(self, timeout: float) -> Dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout(f"no reply within {timeout:g} s")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerGone(f"worker exited (status {self.proc.wait()})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line.decode("utf-8"))

    def request(self, op: str, timeout: float = 120.0, **fields: Any) -> Dict[str, Any]:
        rid = self._next_id
        self._next_id += 1
        msg = dict(fields)
        msg["id"] = rid
        msg["op"] = op
        self.send_raw((json.dumps(msg) + "\n").encode("utf-8"))
        reply = self.read_reply(timeout)
        if reply.get("id") != rid:
            raise RuntimeError(f"reply id {reply.get('id')} != request id {rid}: {reply}")
        return reply

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request("shutdown", timeout=30)
            except (WorkerGone, WorkerTimeout, RuntimeError, ValueError):
                pass
        self.kill()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        self._drain.join(timeout=10)
        if self.proc.stderr is not None:
            try:
                self.proc.stderr.close()
            except OSError:
                pass


def load_suite(platform: str) -> List[Dict[str, Any]]:
    with open(os.path.join(TESTDATA_DIR, "suite.json"), encoding="utf-8") as f:
        entries = json.load(f)
    return [e for e in entries if e["platform"] == platform]


def problem_request(entry: Dict[str, Any], seeds: List[int]) -> Dict[str, Any]:
    """load_problem fields for a suite entry (its options are kagent.yaml keys)."""
    opts = entry.get("options", {})
    req: Dict[str, Any] = {
        "problem_path": os.path.join(TESTDATA_DIR, entry["problem"], "problem.py"),
        "seeds": seeds,
        "dtype": opts.get("dtype", ""),
        "tf32": opts.get("tf32", "forbid"),
        "allow_inplace": bool(opts.get("allow_inplace", False)),
        "atomics": bool(opts.get("atomics", False)),
        "shapes": opts.get("shapes", []),
        "test_path": "",
    }
    for key in ("atol", "rtol"):
        if key in opts:
            req[key] = opts[key]
    return req


def run_entry(client_factory: Any, state: Dict[str, Any], entry: Dict[str, Any], seeds: List[int],
              default_timeout: float = 300.0) -> Dict[str, Any]:
    """Run one suite entry; returns {"outcome": "pass"|"fail:X"|"time:X"|"fault:Y"|"error:K", "reply": ...}.
    An entry expecting "time:X" passes verification and is then timed: X is the
    check that failed while timing.

    ``state`` holds the current client ("client"); it is replaced after a crash,
    a timeout or a fatal reply.
    """
    client: Optional[WorkerClient] = state.get("client")
    if client is None or client.proc.poll() is not None:
        if client is not None:
            client.close()
        client = client_factory()
        client.start()
        state["client"] = client
    timeout = float(entry.get("timeout_s", default_timeout))
    cuda = entry["platform"] == "cuda"
    try:
        load = client.request("load_problem", timeout=default_timeout, **problem_request(entry, seeds))
        if not load["ok"]:
            return {"outcome": f"error:{load['error']['kind']}", "reply": load}
        reply = client.request(
            "verify",
            timeout=timeout,
            problem_id=load["result"]["problem_id"],
            candidate_path=os.path.join(TESTDATA_DIR, entry["candidate"]),
            require_triton=cuda,
            check_launch=cuda,
        )
    except WorkerTimeout:
        client.kill()
        client.close()
        state["client"] = None
        return {"outcome": "fault:timeout", "reply": None}
    except WorkerGone:
        client.close()
        state["client"] = None
        return {"outcome": "fault:crash", "reply": None}
    if not reply["ok"]:
        # Like the Go supervisor: an error reply is a failed verdict named by its
        # kind (fatal ones, tamper and cuda_error, come this way).
        if reply["error"].get("fatal"):
            client.close()
            state["client"] = None
        return {"outcome": f"fail:{reply['error']['kind']}", "reply": reply}
    result = reply["result"]
    outcome = "pass" if result["passed"] else f"fail:{result['failure']}"
    if result["passed"] and entry["expect"].startswith("time:"):
        # A cheat that verification cannot see: a check run while timing names it.
        bench = client.request("bench", timeout=timeout, problem_id=load["result"]["problem_id"], target="kernel",
                               candidate_path=os.path.join(TESTDATA_DIR, entry["candidate"]), warmup_ms=5, rep_ms=20,
                               recheck=True)
        if not bench["ok"]:
            return {"outcome": f"error:{bench['error']['kind']}", "reply": bench}
        if bench["result"]["failure"]:
            outcome = f"time:{bench['result']['failure']}"
        reply = bench
    if result.get("fatal"):
        client.close()
        state["client"] = None
    else:
        client.request("unload_problem", timeout=default_timeout, problem_id=load["result"]["problem_id"])
    return {"outcome": outcome, "reply": reply}
