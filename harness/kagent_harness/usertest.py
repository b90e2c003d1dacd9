"""Running a kernel dir's test.py (KernelAgent form) in a fresh process: the
candidate is written as kernel.py next to problem.py and test.py in a temporary
directory; the test must exit 0 within the timeout.

The test imports the candidate, so with candidates in runners it runs in a
runner of its own, in the sandbox (``op_usertest`` of runner.py): one forked
for the test alone, which has imported no candidate, starts the test's process
and reports how it ended."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Dict, Optional, Tuple

from . import confine
from .failures import one_line

TAIL_BYTES = 4096


def run_user_test(
    test_path: str,
    candidate_path: str,
    problem_path: str,
    timeout_s: float,
    env: Optional[Dict[str, str]] = None,
) -> Tuple[bool, str]:
    """(passed, one-line reason)."""
    return run_sources(_read(test_path), _read(candidate_path), _read(problem_path), timeout_s,
                       os.path.dirname(os.path.abspath(problem_path)), env)


def run_sources(
    test: str,
    kernel: str,
    problem: str,
    timeout_s: float,
    extra_path: str = "",
    env: Optional[Dict[str, str]] = None,
) -> Tuple[bool, str]:
    """The test's, the candidate's and the problem's sources run as test.py,
    kernel.py and problem.py in a fresh folder; ``extra_path`` (the problem's
    own directory, where it is visible) serves the problem's sibling imports.
    (passed, one-line reason)."""
    tmp = tempfile.mkdtemp(prefix="kagent-usertest-")
    try:
        for name, text in (("kernel.py", kernel), ("problem.py", problem), ("test.py", test)):
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        log_path = os.path.join(tmp, "output.log")
        run_env = dict(env if env is not None else os.environ)
        # kernel.py and problem.py resolve to the copies (the script's directory
        # comes first).
        # The harness's folder serves the launcher, which confines the
        # test's process before test.py runs (confine.py).
        harness = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        run_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (tmp, extra_path, run_env.get("PYTHONPATH", ""), harness) if p)
        launcher = [sys.executable, "-m", "kagent_harness.confine"] + (["--required"] if confine.REQUIRED else [])
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                launcher + ["test.py"],
                cwd=tmp,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=run_env,
                start_new_session=True,
                close_fds=True,
            )
            try:
                code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                return False, f"test.py did not finish within {timeout_s:g} s"
            finally:
                # The test's session ends with it: nothing it started (the
                # candidate's children included) is left behind.
                _kill_group(proc)
        if code == 0:
            return True, "test.py exited 0"
        tail = _tail(log_path)
        how = f"signal {-code}" if code < 0 else f"status {code}"
        return False, one_line(f"test.py exited with {how}: {tail}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.splitlines() if ln.strip()]
    return " | ".join(lines[-3:]) if lines else "(no output)"


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()
