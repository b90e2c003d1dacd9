"""Launchers built by the judge for later runners (launcher_seeds.py): what a
runner may claim, that the judge's launcher is the one the runner's Triton
looks up, and the sealed files that carry them (built here against a
stand-in libcuda: linking needs the library, nothing loads it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import tempfile
import types
import unittest
from unittest import mock


def _triton() -> bool:
    try:
        import triton  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


@unittest.skipUnless(_triton() or os.environ.get("KAGENT_REQUIRE_TRITON") == "1", "needs triton")
class LauncherSeedsTest(unittest.TestCase):
    def setUp(self) -> None:
        from kagent_harness import launcher_seeds

        self.ls = launcher_seeds
        cc = shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            self.skipTest("no C compiler")
        self.tmp = tempfile.mkdtemp(prefix="kagent-launchers-test-")
        stub = os.path.join(self.tmp, "stub.c")
        with open(stub, "w", encoding="utf-8") as f:
            f.write("int cuInit(unsigned int flags) { return 0; }\n")
        lib = os.path.join(self.tmp, "lib")
        os.mkdir(lib)
        subprocess.check_call([cc, "-shared", "-fPIC", "-o", os.path.join(lib, "libcuda.so.1"), stub])
        self.env = mock.patch.dict(os.environ, {"TRITON_LIBCUDA_PATH": lib})
        self.env.start()
        from triton.backends.nvidia import driver as nv

        # Triton remembers the library's directory for the process; each
        # test has its own stand-in.
        self.nv = nv
        nv.libcuda_dirs.cache_clear()
        nv.library_dirs.cache_clear()
        self.state = mock.patch.multiple(launcher_seeds, _seeds={}, _failed=[])
        self.state.start()

    def tearDown(self) -> None:
        self.state.stop()
        self.env.stop()
        self.nv.libcuda_dirs.cache_clear()
        self.nv.library_dirs.cache_clear()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_claims_are_typed_and_bounded(self) -> None:
        ok = ["*fp32", "*bf16", "i32", "i64", "constexpr", "fp32", "*u8", "*i1"]
        self.assertTrue(self.ls.valid(ok))
        for bad in ("*fp32", [], ["*fp32", "i32; rm -rf /"], ["*fp32", ("i32",)], ["*fp33"], ["i32"] * 65, [1]):
            self.assertFalse(self.ls.valid(bad), bad)
        self.assertEqual(self.ls.learn("not a list"), 0)
        self.assertEqual(self.ls.learn([["*fp32", "x"], ["../../etc"]]), 0)
        self.assertEqual(self.ls.seeds(), [])

    def test_the_judges_launcher_is_the_one_triton_looks_up(self) -> None:
        import hashlib
        import sysconfig

        from triton.backends.nvidia import driver as nv
        from triton.runtime import build
        from triton.runtime.cache import get_cache_manager

        sig = ["*fp32", "*fp32", "i32", "constexpr"]
        self.assertEqual(self.ls.learn([sig, sig]), 1, "one launcher per signature")
        self.assertEqual(self.ls.learn([sig]), 0, "built once")
        (key, name, data), = self.ls.seeds()
        # What the runner's Triton generates for a kernel of that signature
        # (arguments by name, constexpr values that do not enter the source).
        theirs = nv.make_launcher({(3,): 1024}, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                                  None)
        self.assertEqual(key, hashlib.sha256((theirs + build.platform_key()).encode("utf-8")).hexdigest())
        self.assertEqual(name, "__triton_launcher" + sysconfig.get_config_var("EXT_SUFFIX"))
        specs, fds = self.ls.to_fds(self.ls.seeds())
        try:
            self.assertEqual(len(fds), 1)
            with self.assertRaises(OSError):
                os.pwrite(fds[0], b"x", 0)  # sealed: the runner cannot change the judge's copy
            cache = os.path.join(self.tmp, "runner-cache")
            with mock.patch.dict(os.environ, {"TRITON_CACHE_DIR": cache}):
                self.assertEqual(self.ls.from_fds(specs, fds), 1)
                found = get_cache_manager(key).get_file(name)
                self.assertIsNotNone(found)
                with open(found, "rb") as f:
                    self.assertEqual(f.read(), data)
                self.assertEqual(self.ls.from_fds([{"key": "../x", "name": name}], fds[:1]), 0)
                self.assertEqual(self.ls.from_fds(specs, []), 0)
            os.fstat(fds[0])  # left open for the request's owner to close
        finally:
            for fd in fds:
                os.close(fd)

    def test_switched_off(self) -> None:
        sig = ["*fp32", "*fp32", "i32", "constexpr"]
        with mock.patch.dict(os.environ, {self.ls.SWITCH: "0"}):
            self.assertFalse(self.ls.enabled())
            self.assertEqual(self.ls.learn([sig]), 0)
        self.assertEqual(self.ls.learn([sig]), 1)
        specs, fds = self.ls.to_fds(self.ls.seeds())
        try:
            cache = os.path.join(self.tmp, "off-cache")
            with mock.patch.dict(os.environ, {self.ls.SWITCH: "0", "TRITON_CACHE_DIR": cache}):
                self.assertEqual(self.ls.from_fds(specs, fds), 0)
            self.assertFalse(os.path.exists(cache) and os.listdir(cache))
        finally:
            for fd in fds:
                os.close(fd)

    def test_caps(self) -> None:
        sigs = [["*fp32"] * k for k in range(1, 10)]
        self.assertEqual(self.ls.learn(sigs), self.ls.NEW_PER_CANDIDATE)
        with mock.patch.object(self.ls, "MAX_SEEDS", self.ls.NEW_PER_CANDIDATE + 1):
            self.assertEqual(self.ls.learn(sigs), 1)
        self.assertEqual(len(self.ls.seeds()), self.ls.NEW_PER_CANDIDATE + 1)

    def test_the_runner_records_what_its_triton_builds(self) -> None:
        from triton.backends.nvidia import driver as nv

        from kagent_harness.runner import Runner

        original = nv.make_launcher
        fake = types.SimpleNamespace(launch_signatures=[])
        try:
            Runner._record_launchers(fake)  # type: ignore[arg-type]
            a = nv.make_launcher({}, {"x": "*fp32", "n": "i32"}, None)
            nv.make_launcher({}, {"x": "*fp32", "n": "i32"}, None)
            nv.make_launcher({}, {"x": ("*fp32", "*fp32"), "n": "i32"}, None)  # a tuple argument: not claimed
            self.assertEqual(a, original({}, {"x": "*fp32", "n": "i32"}, None))
            self.assertEqual(fake.launch_signatures, [["*fp32", "i32"]])
        finally:
            nv.make_launcher = original


class RunnerReceivesSeedsTest(unittest.TestCase):
    """Seeds sent with a runner's load request, through the real runner
    process and its protocol (file descriptors passed with the request),
    land in that runner's cache; malformed ones are ignored and the load
    goes on."""

    def test_load_writes_the_seeds(self) -> None:
        from kagent_harness import launcher_seeds
        from kagent_harness.device import Device
        from kagent_harness.remote import RunnerClient, sandboxed

        name = launcher_seeds.LAUNCHER + sysconfig.get_config_var("EXT_SUFFIX")
        blob = b"\x7fELF" + bytes(4000)
        cases = [
            ([("ab" * 32, name, blob)], 1),
            ([("ab" * 32, name, blob)], "off"),  # KAGENT_TRITON_SEEDS=0 in the runner's environment
            ([("ab" * 32, "other.so", blob)], 0),  # not a launcher's name
            ([("../" + "ab" * 31, name, blob)], 0),  # not a key
        ]
        for seeds, want in cases:
            specs, fds = launcher_seeds.to_fds(seeds)
            self.assertEqual(len(fds), 1)
            # An unsandboxed runner takes this process's environment: its cache
            # here, not the user's (a sandboxed one has its own /tmp/triton).
            cache = tempfile.mkdtemp(prefix="kagent-runner-cache-")
            try:
                env = {"TRITON_CACHE_DIR": cache}
                if want == "off":
                    env[launcher_seeds.SWITCH], want = "0", 0
                with mock.patch.dict(os.environ, env):
                    rc = RunnerClient(Device("cpu"))
                try:
                    reply = rc.request("load", {"source": "def kernel_function(x):\n    return x + 1\n",
                                                "name": "kernel.py", "entry": "", "require_triton": False,
                                                "seeds": specs, "tf32": "allow", "dtype": ""}, fds=fds)
                    self.assertEqual(reply.get("entry"), "kernel_function")
                    self.assertEqual(reply.get("seeded"), want, seeds[0][:2])
                finally:
                    rc.close()
                if want and not sandboxed():
                    from triton.runtime.cache import get_cache_manager

                    with mock.patch.dict(os.environ, {"TRITON_CACHE_DIR": cache}):
                        found = get_cache_manager(seeds[0][0]).get_file(name)
                    self.assertIsNotNone(found, os.listdir(cache))
                    with open(found, "rb") as f:
                        self.assertEqual(f.read(), blob)
            finally:
                for fd in fds:
                    os.close(fd)
                shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
