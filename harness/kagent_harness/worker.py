"""The worker's request loop: ``python3 -m kagent_harness.worker``.

It takes the protocol descriptors first (so nothing printed while importing
torch can corrupt them), imports torch and triton once, replies to the implicit
``hello`` (id 0) and then serves one request at a time until ``shutdown`` or
end of input. A reply marked fatal is followed by exit status 70: the process
is no longer trusted (CUDA error, tampering) and the supervisor restarts it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from . import longlived
from .failures import OOM
from .protocol import Channel, ProtocolError, error, ok
from .room import Room

EXIT_FATAL = 70


def _log(msg: str) -> None:
    try:
        sys.stderr.write(f"kagent_harness: {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# compile_ahead's answer when KAGENT_COMPILE_AHEAD is not 1.
COMPILE_AHEAD_OFF = "off (KAGENT_COMPILE_AHEAD=1 turns it on)"


class Worker(Room):
    def __init__(self, channel: Channel, device: Any) -> None:
        # Imported here, after the protocol descriptors are taken.
        import itertools

        from .guard import Guard

        self.channel = channel
        self.device = device
        self.problems: Dict[str, Any] = {}
        self.candidates: "OrderedDict[Tuple[str, str, str], Any]" = OrderedDict()
        self._ids = itertools.count(1)
        self.guard = Guard()

    # -- ops --

    def hello(self) -> Dict[str, Any]:
        import platform

        import torch

        from . import HARNESS_VERSION, PROTOCOL_VERSION
        from .launches import triton_module

        triton = triton_module()
        return {
            "pid": os.getpid(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "triton": getattr(triton, "__version__", None) if triton is not None else None,
            "device": self.device.info(),
            "interpret": os.environ.get("TRITON_INTERPRET", "") == "1",
            "compile_available": hasattr(torch, "compile"),
            "harness": HARNESS_VERSION,
            "protocol": PROTOCOL_VERSION,
        }

    def load_problem(self, req: Dict[str, Any]) -> Dict[str, Any]:
        from .loading import load_problem

        # Runners of candidates kept from earlier work hold device memory the
        # new problem's draws may need (its size is not known before it loads).
        self._drop_all()
        longlived.refreeze_if_idle(self._idle(), bool(self.problems))
        # No candidate's process exists now: the events' own span measured
        # here bounds the one every later timing subtracts.
        from .bracket import measure_reference
        from .timing import flush_bytes

        measure_reference(self.device, flush_bytes(self.device))
        pid = f"p{next(self._ids)}"
        problem = load_problem(req, self.device, pid)
        from .spare import Spare

        problem.spare = Spare()
        self.problems[pid] = problem
        self.guard.expect_tf32(problem.tf32)
        # Threads the reference's module started are the user's, not a candidate's.
        self.guard.accept_threads()
        # The reference must not change under the candidates (eager baselines
        # and references are computed from it).
        module, model = problem.module, problem.model
        self.guard.watch(f"problem {pid}: Model.forward", lambda: module.Model.forward)
        self.guard.watch(f"problem {pid}: model.forward", lambda: vars(model).get("forward"))
        self.guard.watch(f"problem {pid}: get_inputs", lambda: module.get_inputs)
        return problem.summary()

    def _problem(self, req: Dict[str, Any]) -> Any:
        from .failures import RequestError

        from .loading import apply_tf32

        pid = str(req.get("problem_id") or "")
        problem = self.problems.get(pid)
        if problem is None:
            raise RequestError("bad_request", f"unknown problem_id {pid!r} (load_problem first)")
        # Every op on a problem runs under that problem's TF32 policy.
        apply_tf32(problem.tf32)
        self.guard.expect_tf32(problem.tf32)
        return problem

    def unload_problem(self, req: Dict[str, Any]) -> Dict[str, Any]:
        problem = self._problem(req)
        pid = problem.id
        del self.problems[pid]
        if problem.spare is not None:
            problem.spare.drop()
        self.guard.unwatch(f"problem {pid}:")
        for key in [k for k in self.candidates if k[0] == pid]:
            self._drop(key)
        # The problem's tensors are in reference cycles (its module, the
        # compiled baseline) and in torch.compile's caches: free them now,
        # so that the process that loads the problem next (the acceptance
        # gate, the profiler) finds the memory free. Another problem's
        # compiled baseline compiles again at its next use.
        compiled = problem.compiled is not None
        del problem
        import gc

        longlived.thaw()
        if compiled:
            import torch

            torch._dynamo.reset()
        gc.collect()
        self.device.empty_cache()
        longlived.refreeze_if_idle(self._idle(), bool(self.problems), collected=True)
        return {"problem_id": pid}

    def _idle(self) -> bool:
        """Nothing of a candidate lives in this judge: no kept candidate, no
        spare runner (longlived.py freezes only then)."""
        return not self.candidates and not self._live_spares()

    def memory(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """What this process holds: device allocator counters, the tensors
        the garbage collector sees, the shared buffers of its runners."""
        import gc

        from .memplan import tensor_bytes_alive

        gc.collect()
        dev = self.device
        out: Dict[str, Any] = {
            "free_bytes": dev.free_memory(),
            "tensors": tensor_bytes_alive(),
            "candidates": len(self.candidates),
            "spares": len(self._live_spares()),
            # Process ids (in the runner server's namespace) of the kept
            # candidates' runners, by file name, and of the spares: which
            # process a candidate ran in.
            "runner_pids": [[os.path.basename(k[1]), int(getattr(getattr(c, "rc", None), "inner_pid", 0))]
                            for k, c in self.candidates.items()],
            "spare_pids": [int(s.rc.inner_pid) for s in self._live_spares()],
            "problems": len(self.problems),
            # Objects out of the collector's sight (and of "tensors"): the
            # fork server's imports, and what longlived.py froze.
            "frozen_objects": gc.get_freeze_count(),
            "slot_bytes": sum(int(getattr(c, "slot_bytes", lambda: 0)()) for c in self.candidates.values()),
        }
        if dev.is_gpu:
            api = dev._api()
            out["allocated_bytes"] = int(api.memory_allocated(dev.torch_device))
            out["reserved_bytes"] = int(api.memory_reserved(dev.torch_device))
            out["peak_allocated_bytes"] = int(api.max_memory_allocated(dev.torch_device))
        return out

    def static_check(self, req: Dict[str, Any]) -> Dict[str, Any]:
        from .failures import RequestError
        from .static_check import check_file

        path = str(req.get("candidate_path") or "")
        if not os.path.isfile(path):
            raise RequestError("bad_request", f"candidate_path {path!r} is not a file")
        problem_path = str(req.get("problem_path") or "")
        return check_file(path, _require_triton(req), problem_path).as_dict()

    def fingerprint(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """The candidate's code fingerprint (fingerprint.py): with a loaded
        problem and Triton, from the TTIR of one call's launches, computed in
        the candidate's runner, else from its source. A candidate that fails
        to load gets the source fingerprint; verification rejects it."""
        from .candidate import read_source, source_hash
        from .failures import CheckFailure, RequestError
        from .fingerprint import fingerprint_file
        from .launches import triton_module

        path = str(req.get("candidate_path") or "")
        if not os.path.isfile(path):
            raise RequestError("bad_request", f"candidate_path {path!r} is not a file")
        if not req.get("problem_id") or triton_module() is None:
            return fingerprint_file(path)
        problem = self._problem(req)
        key = (problem.id, os.path.realpath(path), source_hash(read_source(path)))
        # A fresh runner: one whose kernels ran in Triton's interpreter has
        # triton.language patched, which the compiler cannot use.
        self._drop(key)
        try:
            with self._active(key):
                return self._candidate(problem, path, req).fingerprint(problem.main)
        except CheckFailure as exc:
            if exc.fatal:
                raise
            out = fingerprint_file(path)
            out["reason"] = f"the candidate did not load ({exc.name}): {exc.reason}"[:500]
            return out
        finally:
            # Verification loads the candidate afresh.
            self._drop(key)

    def screen(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """Screen a batch of knob variants in one runner (screen.py)."""
        from .failures import RequestError
        from .screen import held_out_mode, screen

        problem = self._problem(req)
        paths = [str(p) for p in req.get("candidate_paths") or []]
        bad = [p for p in paths if not os.path.isfile(p)]
        if bad:
            raise RequestError("bad_request", f"candidate_paths: {bad[0]!r} is not a file")
        try:
            held_out_mode(req)
        except ValueError as exc:
            raise RequestError("bad_request", str(exc)) from None
        self._make_room(self._need(problem, "verify"))
        self._spares("settle")  # screening times the variants
        with self._active():
            return screen(problem, paths, {**req, "require_triton": _require_triton(req)})

    def compile_ahead(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """Compile a batch of knob variants' kernels before their
        verifications (screen.py compile_ahead). Off unless
        KAGENT_COMPILE_AHEAD=1: on an H200 a batch took about as long as its
        variants' compiles in their own verifications, plus 0.6 s (Triton's
        compiles gain little from the batch's threads), so it cost more than
        it saved (docs/tuning.md). Under Triton's interpreter nothing
        compiles, and no runner is started."""
        from .failures import RequestError
        from .screen import compile_ahead

        problem = self._problem(req)
        paths = [str(p) for p in req.get("candidate_paths") or []]
        bad = [p for p in paths if not os.path.isfile(p)]
        if bad:
            raise RequestError("bad_request", f"candidate_paths: {bad[0]!r} is not a file")
        if os.environ.get("TRITON_INTERPRET", "") == "1":
            return {"variants": len(paths), "loaded": 0, "compiled": 0, "skipped": "Triton's interpreter compiles nothing"}
        if os.environ.get("KAGENT_COMPILE_AHEAD", "0") != "1":
            return {"variants": len(paths), "loaded": 0, "compiled": 0, "skipped": COMPILE_AHEAD_OFF}
        self._make_room(self._need(problem, "verify"))
        with self._active():
            return compile_ahead(problem, paths, {**req, "require_triton": _require_triton(req)})

    def verify(self, req: Dict[str, Any]) -> Dict[str, Any]:
        from .candidate import read_source, source_hash
        from .failures import RequestError
        from .quickcut import cutoff_of
        from .verify import VerifyOptions, verify

        problem = self._problem(req)
        path = str(req.get("candidate_path") or "")
        if not os.path.isfile(path):
            raise RequestError("bad_request", f"candidate_path {path!r} is not a file")
        require = _require_triton(req)
        opts = VerifyOptions(
            require_triton=require,
            check_launch=bool(req.get("check_launch", require)),
            entry=str(req.get("entry") or ""),
            test_timeout_s=float(req.get("test_timeout_s") or 300.0),
            cutoff_ms=cutoff_of(req),
        )
        key = (problem.id, os.path.realpath(path), source_hash(read_source(path)))
        self._drop(key)
        need = self._need(problem, "verify")
        spare = problem.spare
        self._make_room(need, ready=spare, want=spare.ahead(self.device) if spare is not None else 0)
        if spare is not None:
            spare.need = need
        result, cand = self._verify_once(key, lambda: verify(problem, path, opts, self.guard), self._holders)
        if str(result.get("failure") or "") == OOM and (result.pop("held", False) or self._holders()):
            # Kept runners (or a spare lent its buffers, perhaps the next
            # candidate's, started during this verification) held memory
            # too: the candidate is rejected only if it runs out of memory
            # with every other runner closed.
            self._free_all(self._need(problem, "verify"))
            result, cand = self._verify_once(key, lambda: verify(problem, path, opts, self.guard), lambda: False)
            result["oom_retried"] = True
        self._out_of_memory(str(result.get("failure") or ""))
        if cand is not None:
            self.candidates[key] = cand
            self._keep(problem, key)
            rc = getattr(cand, "rc", None)
            if rc is not None and problem.spare is not None and result.get("passed"):
                problem.spare.record(rc)
        return result

    def _verify_once(self, key: Any, run: Callable[[], Tuple[Dict[str, Any], Any]],
                     others: Callable[[], bool]) -> Tuple[Dict[str, Any], Any]:
        """One verification; where the judge's own copies run out of device
        memory (an error, not a verdict) while other runners hold memory
        (``others``), the result says ``oom`` (and ``held``) so that the
        caller closes them and tries again."""
        try:
            with self._active(key):
                return run()
        except BaseException as exc:  # noqa: BLE001 - re-raised
            if _kind_of(exc) != OOM or not others():
                raise
            self._out_of_memory(OOM, key)
            return {"failure": OOM, "held": True}, None

    def _candidate(self, problem: Any, path: str, req: Dict[str, Any]) -> Any:
        from .candidate import read_source, source_hash
        from .failures import RequestError
        from .verify import load_candidate

        if not os.path.isfile(path):
            raise RequestError("bad_request", f"candidate_path {path!r} is not a file")
        key = (problem.id, os.path.realpath(path), source_hash(read_source(path)))
        cand = self.candidates.get(key)
        if cand is None:
            cand = load_candidate(problem, path, _require_triton(req), str(req.get("entry") or ""), self.guard)
            self.candidates[key] = cand
        self._keep(problem, key)
        return cand

    def _target(self, problem: Any, spec: Dict[str, Any], defaults: Dict[str, Any]) -> Any:
        from .timing import make_target

        kind = str(spec.get("target") or "kernel")
        cand = None
        if kind == "kernel":
            merged = dict(defaults)
            merged.update(spec)
            cand = self._candidate(problem, str(spec.get("candidate_path") or ""), merged)
        return make_target(problem, kind, cand, self.guard)

    def _key_of(self, problem: Any, spec: Dict[str, Any]) -> Any:
        """The candidates map's key of a kernel target (None for baselines)."""
        from .candidate import read_source, source_hash

        path = str(spec.get("candidate_path") or "")
        if str(spec.get("target") or "kernel") != "kernel" or not os.path.isfile(path):
            return None
        return (problem.id, os.path.realpath(path), source_hash(read_source(path)))

    def bench(self, req: Dict[str, Any]) -> Dict[str, Any]:
        from .timing import BenchParams, bench

        problem = self._problem(req)
        key = self._key_of(problem, req)
        self._make_room(self._need(problem, "bench"), keep=(key,))
        out = self._timing(problem, (key,), lambda: bench(problem, self._target(problem, req, {}),
                                                          BenchParams.from_request(req), self.guard))
        if req.get("target") == "compile":
            # The compiled baseline lives until unload: out of the full
            # collections' sight from now (longlived.py).
            longlived.after_compile(self._idle())
        return out

    def compare(self, req: Dict[str, Any]) -> Dict[str, Any]:
        from .failures import RequestError
        from .timing import BenchParams, compare

        problem = self._problem(req)
        a, b = req.get("a"), req.get("b")
        if not isinstance(a, dict) or not isinstance(b, dict):
            raise RequestError("bad_request", "compare needs objects a and b")
        keys = (self._key_of(problem, a), self._key_of(problem, b))
        self._make_room(self._need(problem, "bench"), keep=keys)
        return self._timing(problem, keys, lambda: compare(problem, self._target(problem, a, req),
                                                           self._target(problem, b, req),
                                                           BenchParams.from_request(req), self.guard))

    def _timing(self, problem: Any, keys: Tuple[Any, ...], run: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
        """Run a timing op; where it runs out of device memory while other
        kept runners hold memory, close them all and run it once more. A
        spare runner has answered all it was sent before anything is timed."""
        self._spares("settle")
        others = self._holders(keys)
        for attempt in range(2):
            try:
                with self._active(*keys):
                    out = run()
                if attempt:
                    out["oom_retried"] = True
                return out
            except BaseException as exc:  # noqa: BLE001 - re-raised
                kind = _kind_of(exc)
                self._out_of_memory(kind, *keys)
                if kind != OOM or attempt or not others:
                    raise
                self._free_all(self._need(problem, "bench"))
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _active(self, *keys: Any) -> Iterator[None]:
        """While an op runs on ``keys``, a device buffer that cannot be made
        closes the other kept runners first (shm.new_slot)."""
        from . import shm

        shm.set_room_hook(lambda n: self._make_room(n + (256 << 20), keep=keys))
        try:
            yield
        finally:
            shm.set_room_hook(None)

    # -- dispatch --

    def handle(self, req: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[int]]:
        """The reply and, when the worker must exit after it, the exit status."""
        from .failures import CheckFailure, RequestError, classify, describe
        from .timing import Unavailable

        rid = req.get("id")
        op = req.get("op")
        handlers = {
            "hello": lambda r: self.hello(),
            "load_problem": self.load_problem,
            "unload_problem": self.unload_problem,
            "static_check": self.static_check,
            "fingerprint": self.fingerprint,
            "verify": self.verify,
            "screen": self.screen,
            "compile_ahead": self.compile_ahead,
            "bench": self.bench,
            "compare": self.compare,
            "memory": self.memory,
        }
        if op == "shutdown":
            return ok(rid, {}), 0
        handler = handlers.get(str(op))
        if handler is None:
            return error(rid, "bad_request", f"unknown op {op!r}"), None
        began = time.monotonic()
        try:
            result = handler(req)
        except RequestError as exc:
            return error(rid, exc.kind, exc.message, exc.fatal), (EXIT_FATAL if exc.fatal else None)
        except CheckFailure as exc:
            return error(rid, exc.name, exc.reason, exc.fatal), (EXIT_FATAL if exc.fatal else None)
        except Unavailable as exc:
            target = "compile"
            return ok(rid, {"target": target, "unavailable": str(exc)}), None
        except BaseException as exc:  # noqa: BLE001 - the worker must reply, whatever happened
            _log(f"internal error in {op}:\n{traceback.format_exc()}")
            kind, fatal = classify(exc)
            if kind == "exception":
                kind = "internal"
            if self.device.is_gpu and not fatal and self.device.health_check():
                fatal = True
                kind = "cuda_error"
            return error(rid, kind, f"{op}: {describe(exc)}", fatal), (EXIT_FATAL if fatal else None)
        finally:
            _trace(f"op {op} {time.monotonic() - began:.4f} s")
        if isinstance(result, dict) and result.get("fatal"):
            # A fatal verdict (tamper, CUDA error) is an error reply, like every
            # fatal outcome, with the checks attached; the worker then exits.
            return error(rid, result["failure"], result["reason"], True, result=result), EXIT_FATAL
        return ok(rid, result), None

    def serve(self) -> int:
        while True:
            try:
                req = self.channel.read()
            except ProtocolError as exc:
                self.channel.send(error(None, "bad_request", str(exc)))
                continue
            if req is None:
                return 0
            reply, exit_code = self.handle(req)
            self.channel.send(reply)
            if exit_code is not None:
                return exit_code


def _trace(msg: str) -> None:
    """A step's duration on stderr with KAGENT_TRACE=1 (scripts/verify_cost.py)."""
    if os.environ.get("KAGENT_TRACE") == "1":
        _log(f"trace {msg}")


def _kind_of(exc: BaseException) -> str:
    """The failure kind of an exception out of an op."""
    from .failures import CheckFailure, RequestError, classify

    if isinstance(exc, CheckFailure):
        return exc.name
    if isinstance(exc, RequestError):
        return exc.kind
    return classify(exc)[0]


def _require_triton(req: Dict[str, Any]) -> bool:
    """The request's require_triton; by default, whether Triton is importable."""
    if req.get("require_triton") is not None:
        return bool(req["require_triton"])
    from .launches import triton_module

    return triton_module() is not None


def _setup_environment(kind: str) -> None:
    if kind == "cpu" and "TRITON_INTERPRET" not in os.environ:
        # Triton kernels run through the interpreter on the cpu platform.
        os.environ["TRITON_INTERPRET"] = "1"


def prepare(kind: str, dynamo: bool = True) -> str:
    """Import torch, triton and every harness module; returns the device kind
    ("" picks cuda when available). Initialises no device: a fork server runs
    this once and forks workers after it. ``dynamo=False`` (the runners'
    server: runners never run torch.compile, their guard does not need it)
    leaves torch._dynamo out."""
    if not kind:
        # NVML answers without initialising CUDA in this process; CUDA
        # initialised before a fork fails in every child.
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    import torch

    if not kind:
        kind = "cuda" if torch.cuda.is_available() else "cpu"
    _setup_environment(kind)
    from .launches import import_triton_parts, triton_module, warm_compiler

    if triton_module() is not None:
        import_triton_parts()
        if kind == "cuda" and not getattr(torch.version, "hip", None):
            # Triton's once-per-process compile set-up, done here: a fork
            # server pays it once, not every worker and runner it forks.
            why = warm_compiler()
            if why:
                sys.stderr.write(f"kagent_harness: Triton's compiler not warmed: {why}\n")
    # Import every harness module now: the guard watches them, and a copy
    # changed on disk later (by a candidate) is never read by this process.
    import importlib

    from . import flops

    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py") and name not in ("__init__.py", "worker.py", "launch.py"):
            importlib.import_module(f"{__package__}.{name[:-3]}")

    # FlopCounterMode (torch >= 2.1) too, before the guard's baseline; and
    # torch._dynamo, which the guard imports (seconds of CPU): a fork server
    # pays it once, not every worker and runner it forks.
    if dynamo:
        flops.counter_module()
        from .guard import _import_optional

        _import_optional("torch._dynamo")
    return kind


def stacks_on_sigusr1() -> None:
    """SIGUSR1 writes every thread's Python stack to stderr (for a process
    that seems stuck: ``pkill -USR1 -f kagent_harness``). Called first in
    the worker's and the fork servers' main; the workers and runners they
    fork inherit it."""
    try:
        import faulthandler
        import signal

        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    except (AttributeError, ValueError, OSError, RuntimeError):
        pass


def serve(channel: Channel, kind: str) -> int:
    """Build the device and the worker, send hello and serve until the end."""
    try:
        from .device import Device

        device = Device(kind)
        worker = Worker(channel, device)
        hello = worker.hello()
    except BaseException as exc:  # noqa: BLE001 - report start-up failure on the protocol
        _log(f"start-up failed:\n{traceback.format_exc()}")
        channel.send(error(0, "startup", f"worker start-up failed: {type(exc).__name__}: {exc}", True))
        return EXIT_FATAL
    channel.send(ok(0, hello))
    code = worker.serve()
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def main() -> int:
    stacks_on_sigusr1()
    channel = Channel()
    try:
        kind = prepare(os.environ.get("KAGENT_DEVICE", "").strip())
    except BaseException as exc:  # noqa: BLE001 - report start-up failure on the protocol
        _log(f"start-up failed:\n{traceback.format_exc()}")
        channel.send(error(0, "startup", f"worker start-up failed: {type(exc).__name__}: {exc}", True))
        return EXIT_FATAL
    return serve(channel, kind)


if __name__ == "__main__":
    code = main()
    # Skip interpreter teardown: a poisoned CUDA context can hang in it.
    os._exit(code)
