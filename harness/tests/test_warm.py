"""Triton's compiler warmed in a fork server (launches.warm_compiler): no
device, no thread, nothing left in the cache, and a process forked after it
compiles kernels as before. Triton's driver module built ahead in a
profile's process (launches.warm_driver): no CUDA started."""

from __future__ import annotations

import os
import subprocess
import unittest

from kagent_harness.launches import warm_compiler


def _triton() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


# Run in a fresh interpreter without TRITON_INTERPRET: the suite's other
# tests run kernels through Triton's interpreter, which patches
# triton.language in this process for good.
_WARM_CHECKS = r"""
import os, sys, tempfile
from kagent_harness.launches import warm_compiler

def fail(why):
    print(why)
    sys.exit(1)

cache = tempfile.mkdtemp(prefix="kagent-warm-test-")
os.environ["TRITON_CACHE_DIR"] = cache
threads = len(os.listdir("/proc/self/task"))
got = warm_compiler()
if got != "":
    fail("warm_compiler: " + got)
if os.environ["TRITON_CACHE_DIR"] != cache:
    fail("the cache setting is not restored")
if os.listdir(cache):
    fail("written to the process's cache: %r" % os.listdir(cache))
if len(os.listdir("/proc/self/task")) != threads:
    fail("a thread left running (forks follow)")
os.rmdir(cache)
os.environ.pop("TRITON_CACHE_DIR")

r, w = os.pipe()
pid = os.fork()
if pid == 0:  # the child: compile another kernel, report through the pipe
    code = 1
    try:
        os.close(r)
        code = 0 if warm_compiler() == "" else 1
    finally:
        os.write(w, bytes([code]))
        os._exit(code)
os.close(w)
got = os.read(r, 1)
os.close(r)
_, status = os.waitpid(pid, 0)
if got != b"\x00" or os.waitstatus_to_exitcode(status) != 0:
    fail("the forked child did not compile: %r, exit %d" % (got, os.waitstatus_to_exitcode(status)))
print("ok")
"""

# launches.warm_driver, in a fresh interpreter likewise: no CUDA initialised,
# and on an NVIDIA GPU the driver's module built into the process's cache
# (where its first launch then finds it); elsewhere a reason, never a raise.
_DRIVER_CHECKS = r"""
import os, sys, tempfile
cache = tempfile.mkdtemp(prefix="kagent-warm-driver-test-")
os.environ["TRITON_CACHE_DIR"] = cache
import torch
from kagent_harness.launches import warm_driver

got = warm_driver()
if not isinstance(got, str) or "\n" in got:
    print("not a one-line reason: %r" % (got,)); sys.exit(1)
if torch.cuda.is_initialized():
    print("CUDA initialised"); sys.exit(1)
built = [f for _, _, fs in os.walk(cache) for f in fs if f.startswith("cuda_utils")]
nvidia = torch.cuda.is_available() and not getattr(torch.version, "hip", None)
if nvidia and (got != "" or not built):
    print("not warmed on an NVIDIA GPU: %r, cache %r" % (got, built)); sys.exit(1)
if got == "" and not built:
    print("warmed, but no driver module in the cache"); sys.exit(1)
print("ok" if got == "" else "not warmed: " + got)
"""


def _fresh(script: str) -> subprocess.CompletedProcess:
    """script run in a fresh interpreter without TRITON_INTERPRET, from the
    harness's folder."""
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run([sys.executable, "-c", script], cwd=here, env=env,
                          capture_output=True, text=True, check=False)


@unittest.skipUnless(_triton() or os.environ.get("KAGENT_REQUIRE_TRITON") == "1", "needs triton")
class WarmCompilerTest(unittest.TestCase):
    def test_warm_leaves_nothing_behind_and_a_forked_child_compiles(self) -> None:
        done = _fresh(_WARM_CHECKS)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr[-2000:])
        self.assertEqual(done.stdout.strip(), "ok")

    def test_warm_driver_starts_no_cuda_and_builds_the_driver_module_on_nvidia(self) -> None:
        done = _fresh(_DRIVER_CHECKS)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr[-2000:])
        self.assertTrue(done.stdout.startswith(("ok", "not warmed: ")), done.stdout)

    def test_interpreter_mode_is_not_warmed(self) -> None:
        from unittest import mock

        with mock.patch.dict(os.environ, {"TRITON_INTERPRET": "1"}):
            self.assertEqual(warm_compiler(), "interpreter mode")


if __name__ == "__main__":
    unittest.main()
