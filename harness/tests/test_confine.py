"""Signal confinement (confine.py): a process that runs candidate code, a
runner or a user test's process, can signal, reprioritise or limit no
process but itself, from any of its threads, by any system call that
reaches another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import unittest

from kagent_harness import confine
from kagent_harness.failures import CheckFailure

HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORTED = sys.platform.startswith("linux") and confine.machine() in ("x86_64", "aarch64")

# Runs confined with a victim process alive; prints what each attempt gave
# (an errno, or "ok").
PROBE = textwrap.dedent("""
    import fcntl, json, os, resource, signal, socket, sys, threading
    from kagent_harness import confine

    victim = int(sys.argv[1])
    spin = threading.Event()
    done = threading.Event()
    res = {}

    def attempt(name, f):
        try:
            f()
            res[name] = "ok"
        except OSError as e:
            res[name] = e.errno

    def early_thread():  # started before the filter: TSYNC reaches it
        spin.wait()
        attempt("thread_kill_victim", lambda: os.kill(victim, signal.SIGKILL))
        done.set()

    t = threading.Thread(target=early_thread)
    t.start()
    confine.to_self()
    spin.set()
    done.wait()
    me = os.getpid()
    attempt("kill_victim", lambda: os.kill(victim, signal.SIGKILL))
    attempt("stop_victim", lambda: os.kill(victim, signal.SIGSTOP))
    attempt("kill_group_0", lambda: os.kill(0, 0))
    attempt("killpg_victim", lambda: os.killpg(victim, 0))
    attempt("pidfd_victim", lambda: signal.pidfd_send_signal(os.pidfd_open(victim), signal.SIGKILL))
    attempt("setpriority_victim", lambda: os.setpriority(os.PRIO_PROCESS, victim, 19))
    attempt("setpriority_user", lambda: os.setpriority(os.PRIO_USER, 0, 19))
    attempt("prlimit_victim", lambda: resource.prlimit(victim, resource.RLIMIT_CPU, (1, 1)))
    attempt("affinity_victim", lambda: os.sched_setaffinity(victim, {0}))
    attempt("scheduler_victim", lambda: os.sched_setscheduler(victim, os.SCHED_IDLE, os.sched_param(0)))
    a, b = socket.socketpair()
    attempt("setown_victim", lambda: fcntl.fcntl(a, fcntl.F_SETOWN, victim))
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PTRACE_ATTACH, nr = 16, {"x86_64": 101, "aarch64": 117}[confine.machine()]

    def ptrace():
        if libc.syscall(nr, PTRACE_ATTACH, victim, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "ptrace")
        libc.syscall(nr, 17, victim, 0, 0)  # PTRACE_DETACH

    attempt("ptrace_victim", ptrace)
    # What the process does to itself still works.
    attempt("kill_self", lambda: os.kill(me, 0))
    attempt("raise_self", lambda: signal.raise_signal(signal.SIGWINCH))
    attempt("thread_signal", lambda: signal.pthread_kill(t.ident or 0, 0) if t.is_alive() else None)
    attempt("setpriority_self", lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))
    attempt("rlimit_self", lambda: resource.setrlimit(resource.RLIMIT_CORE, resource.getrlimit(resource.RLIMIT_CORE)))
    attempt("affinity_self", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
    attempt("setown_self", lambda: fcntl.fcntl(a, fcntl.F_SETOWN, me))
    t.join()
    print(json.dumps(res))
""")

OTHERS = ("kill_victim", "stop_victim", "kill_group_0", "killpg_victim", "pidfd_victim", "setpriority_victim",
          "setpriority_user", "prlimit_victim", "affinity_victim", "scheduler_victim", "setown_victim",
          "thread_kill_victim", "ptrace_victim")
SELF = ("kill_self", "raise_self", "thread_signal", "setpriority_self", "rlimit_self", "affinity_self",
        "setown_self")


def _victim(test: unittest.TestCase) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

    def end() -> None:
        p.kill()
        p.wait()

    test.addCleanup(end)
    return p


def _alive(p: subprocess.Popen) -> bool:
    time.sleep(0.2)
    if p.poll() is not None:
        return False
    with open(f"/proc/{p.pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t", "Z")


def _nice(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[16]


class ProgramTest(unittest.TestCase):
    def test_both_architectures_assemble(self) -> None:
        for arch in ("x86_64", "aarch64"):
            prog = confine.program(4242, arch)
            self.assertLess(len(prog), 256, arch)
            self.assertEqual(prog[-1][3], confine._RET_EPERM, "the last instruction refuses")
            self.assertIn((0x15, 0, 0, 4242), [(c, 0, 0, k) for c, _, _, k in prog], "the pid is compared")
        x32 = [i for i in confine.program(1, "x86_64") if i[0] == 0x35]
        self.assertEqual(len(x32), 1, "x86_64 refuses the x32 ABI")
        self.assertFalse([i for i in confine.program(1, "aarch64") if i[0] == 0x35])


@unittest.skipUnless(SUPPORTED, "seccomp filters on Linux x86_64 and aarch64 only")
class ConfinedProcessTest(unittest.TestCase):
    def test_reaches_no_other_process_from_any_thread(self) -> None:
        victim = _victim(self)
        out = subprocess.run([sys.executable, "-c", PROBE, str(victim.pid)], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=HARNESS), timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        for name in OTHERS:
            self.assertEqual(res[name], 1, f"{name}: want EPERM, got {res[name]}")
        for name in SELF:
            self.assertEqual(res[name], "ok", f"{name}: {res[name]}")
        self.assertTrue(_alive(victim), "the victim runs on")

    def test_launcher_runs_the_script_as_main_confined(self) -> None:
        victim = _victim(self)
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "helper.py"), "w") as f:
                f.write("VALUE = 7\n")
            with open(os.path.join(d, "test.py"), "w") as f:
                f.write(textwrap.dedent(f"""
                    import os, sys
                    import helper  # the script's folder comes first, as with python test.py
                    assert __name__ == "__main__" and sys.argv == ["test.py", "x"], (__name__, sys.argv)
                    try:
                        os.kill({victim.pid}, 9)
                    except PermissionError:
                        sys.exit(helper.VALUE)
                    sys.exit(1)
                """))
            out = subprocess.run([sys.executable, "-m", "kagent_harness.confine", "--required", "test.py", "x"],
                                 cwd=d, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=HARNESS),
                                 timeout=120)
        self.assertEqual(out.returncode, 7, out.stderr)
        self.assertTrue(_alive(victim))


@unittest.skipUnless(SUPPORTED, "seccomp filters on Linux x86_64 and aarch64 only")
class ConfinedCandidateTest(unittest.TestCase):
    """Through the real fork server and runners: a candidate's code, once
    past the static check by whatever route, cannot touch another runner
    (the next candidate's spare, the best's runner being timed)."""

    def test_a_candidate_cannot_signal_another_runner(self) -> None:
        from kagent_harness.device import Device
        from kagent_harness.remote import RunnerClient

        victim = RunnerClient(Device("cpu"))
        self.addCleanup(victim.close)
        nice = _nice(victim.pid)
        attacker = RunnerClient(Device("cpu"))
        self.addCleanup(attacker.close)
        source = textwrap.dedent(f"""
            import os, resource, signal
            out = []
            for name, f in (("kill", lambda: os.kill({victim.pid}, signal.SIGSTOP)),
                            ("priority", lambda: os.setpriority(os.PRIO_PROCESS, {victim.pid}, 19)),
                            ("limit", lambda: resource.prlimit({victim.pid}, resource.RLIMIT_CPU, (0, 0))),
                            ("self", lambda: os.kill(os.getpid(), 0))):
                try:
                    f()
                    out.append(name + "=ok")
                except PermissionError:
                    out.append(name + "=refused")
            raise RuntimeError("outcome " + " ".join(out))
        """)
        with self.assertRaises(CheckFailure) as cm:
            attacker.request("load", {"source": source, "name": "attack.py", "entry": "", "tf32": "forbid",
                                      "dtype": ""}, what="importing attack.py")
        self.assertIn("outcome kill=refused priority=refused limit=refused self=ok", cm.exception.reason)
        victim.request("ping", {}, what="the victim")  # it answers: not stopped, not killed
        self.assertEqual(_nice(victim.pid), nice, "its nice value is unchanged")

    def test_a_user_test_cannot_signal_another_process(self) -> None:
        from kagent_harness.usertest import run_sources

        victim = _victim(self)
        test = textwrap.dedent(f"""
            import os, sys
            try:
                os.kill({victim.pid}, 9)
            except PermissionError:
                sys.exit(0)
            sys.exit(1)
        """)
        ok, reason = run_sources(test, "X = 1\n", "Y = 2\n", 60.0)
        self.assertTrue(ok, reason)
        self.assertTrue(_alive(victim))


if __name__ == "__main__":
    unittest.main()
