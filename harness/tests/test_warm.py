"""Triton's compiler warmed in a fork server (launches.warm_compiler): no
device, no thread, nothing left in the cache, and a process forked after it
compiles kernels as before."""

from __future__ import annotations

import os
import tempfile
import unittest

from kagent_harness.launches import warm_compiler


def _triton() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


@unittest.skipUnless(_triton() or os.environ.get("KAGENT_REQUIRE_TRITON") == "1", "needs triton")
class WarmCompilerTest(unittest.TestCase):
    def test_warm_leaves_nothing_behind(self) -> None:
        cache = tempfile.mkdtemp(prefix="kagent-warm-test-")
        saved = os.environ.get("TRITON_CACHE_DIR")
        os.environ["TRITON_CACHE_DIR"] = cache
        try:
            threads = len(os.listdir("/proc/self/task"))
            self.assertEqual(warm_compiler(), "")
            self.assertEqual(os.environ["TRITON_CACHE_DIR"], cache, "the cache setting is restored")
            self.assertEqual(os.listdir(cache), [], "nothing written to the process's cache")
            self.assertEqual(len(os.listdir("/proc/self/task")), threads, "no thread left running (forks follow)")
        finally:
            if saved is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = saved
            os.rmdir(cache)

    def test_a_forked_child_compiles(self) -> None:
        self.assertEqual(warm_compiler(), "")
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
        self.assertEqual(got, b"\x00")
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)


if __name__ == "__main__":
    unittest.main()
