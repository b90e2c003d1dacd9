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


@unittest.skipUnless(_triton() or os.environ.get("KAGENT_REQUIRE_TRITON") == "1", "needs triton")
class WarmCompilerTest(unittest.TestCase):
    def test_warm_leaves_nothing_behind_and_a_forked_child_compiles(self) -> None:
        import subprocess
        import sys

        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        done = subprocess.run([sys.executable, "-c", _WARM_CHECKS], cwd=here, env=env,
                              capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr[-2000:])
        self.assertEqual(done.stdout.strip(), "ok")

    def test_interpreter_mode_is_not_warmed(self) -> None:
        from unittest import mock

        with mock.patch.dict(os.environ, {"TRITON_INTERPRET": "1"}):
            self.assertEqual(warm_compiler(), "interpreter mode")


@unittest.skipUnless(_triton() or os.environ.get("KAGENT_REQUIRE_TRITON") == "1", "needs triton")
class DriverSeedTest(unittest.TestCase):
    """The NVIDIA backend's C helper module, built once and written into a
    runner's empty Triton cache where Triton's own lookup finds it (built
    here against a stand-in libcuda: linking needs the library, nothing
    loads it)."""

    def test_seeded_module_is_what_triton_looks_up(self) -> None:
        import shutil
        import subprocess
        import sysconfig
        from unittest import mock

        from kagent_harness import launches

        if shutil.which("gcc") is None and shutil.which("clang") is None:
            self.skipTest("no C compiler")
        tmp = tempfile.mkdtemp(prefix="kagent-seed-test-")
        try:
            stub = os.path.join(tmp, "stub.c")
            with open(stub, "w", encoding="utf-8") as f:
                f.write("int cuInit(unsigned int flags) { return 0; }\n")
            lib = os.path.join(tmp, "lib")
            os.mkdir(lib)
            cc = shutil.which("gcc") or shutil.which("clang")
            subprocess.check_call([cc, "-shared", "-fPIC", "-o", os.path.join(lib, "libcuda.so.1"), stub])
            from triton.backends.nvidia import driver as nv

            # Triton remembers the library's directory for the process.
            nv.libcuda_dirs.cache_clear()
            nv.library_dirs.cache_clear()
            with mock.patch.dict(os.environ, {"TRITON_LIBCUDA_PATH": lib}):
                seed, why = launches.build_driver_seed()
            nv.libcuda_dirs.cache_clear()
            nv.library_dirs.cache_clear()
            self.assertIsNotNone(seed, why)
            key, name, data = seed
            self.assertEqual(name, "cuda_utils" + sysconfig.get_config_var("EXT_SUFFIX"))
            self.assertGreater(len(data), 1000)
            cache = os.path.join(tmp, "runner-cache")
            with mock.patch.dict(os.environ, {"TRITON_CACHE_DIR": cache}):
                from pathlib import Path

                from triton.backends.nvidia import driver as nv
                from triton.runtime import build
                from triton.runtime.cache import get_cache_manager

                src = Path(os.path.join(nv.dirname, "driver.c")).read_text()
                want = __import__("hashlib").sha256((src + build.platform_key()).encode("utf-8")).hexdigest()
                self.assertEqual(key, want, "the key Triton's compile_module_from_src computes")
                self.assertIsNone(get_cache_manager(key).get_file(name))
                launches.seed_cache(seed)
                found = get_cache_manager(key).get_file(name)
                self.assertIsNotNone(found, "Triton's lookup finds the seeded module")
                with open(found, "rb") as f:
                    self.assertEqual(f.read(), data)
                launches.seed_cache(seed)  # already there: left as it is
                launches.seed_cache(None)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
