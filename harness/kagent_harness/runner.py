"""The runner: the only process that imports and runs a candidate.

A runner is forked from the fork server (which has imported torch and the
harness but never held a problem or run a candidate) for one candidate, and
talks to its judge over a SOCK_SEQPACKET link (link.py). It holds no
reference output, no tolerance, no seed of the problem's draws and no channel
the supervisor reads: its replies are claims the judge checks. The judge owns
the shared buffers (shm.py) the candidate reads its inputs from and the runner
copies its outputs into.

Requests (JSON objects with an ``op``), one reply each (``{"ok": ...}`` or
``{"error": {"kind", "message"}}``):

- ``slots``    open the judge's shared buffers (memfd descriptors or CUDA IPC).
- ``load``     import the candidate file, find its entry point.
- ``build``    the callable for one shape set (ModelNew with the given weights).
- ``call``     one call on slot inputs; outputs copied into slot outputs.
- ``prepare``  first call, estimate and time-based warm-up of timing.
- ``timed``    one timed call (events or CPU time), optionally its outputs.
- ``burst``    several calls between two events and one synchronisation.
- ``ping``     nothing (the judge calibrates its clock checks with it).
- ``precompile`` import and build a batch of variants (screening), record
  one call's Triton launches each and compile them all on several threads.
- ``select``   make one variant of the batch the loaded candidate.
- ``usertest`` run a kernel dir's test.py on the candidate in a process of its
  own and report how it ended; only in a runner that has imported no candidate
  (the candidate runs in the test's process alone, which inherits no
  descriptor of this link).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Tuple

EXIT_TAMPER = 71
TRACE = os.environ.get("KAGENT_TRACE") == "1"  # each op's duration on stderr (scripts/trace_summary.py)
# Device memory left free when a mirror is made (else other mirrors go first),
# and the free fraction under which a call's unused mirrors are freed first.
MIRROR_HEADROOM = 1 << 30
TRIM_FRACTION = 0.25


def _log(msg: str) -> None:
    try:
        sys.stderr.write(f"kagent_harness.runner: {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class _Failure(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class Runner:
    def __init__(self, link: Any, kind: str) -> None:
        import torch

        from .device import Device
        from .guard import Guard

        self.torch = torch
        self.link = link
        self.device = Device(kind)
        self.slots: Dict[int, Tuple[Any, Any]] = {}
        self.views: Dict[Tuple[Any, ...], Any] = {}
        self.mirrors: Dict[Tuple[Any, ...], Any] = {}
        # The output of the last timed call (kept only until the next
        # request): the judge reads it with "last_out" when it checks that
        # call, after the call returned, so the call cannot know it.
        self.last_out: Any = None
        # Device copies of the input slots: on a GPU; on the CPU only for
        # testing that path (KAGENT_RUNNER_MIRRORS=1).
        self.mirror = self.device.is_gpu or os.environ.get("KAGENT_RUNNER_MIRRORS") == "1"
        self.device_bytes = int(self.device.info().get("total_memory") or 0) if self.device.is_gpu else 0
        self.used: set = set()
        self.kept: List[Any] = []
        self.module: Any = None
        self.entry = ""
        self.path = ""
        self.dtype: Any = None
        self.callables: Dict[str, Callable[..., Any]] = {}
        self.flush: Any = None
        self.guard = Guard(dynamo=False)
        # The last precompile's variants (screening): module, entry, path;
        # empty for one that failed to load.
        self.variants: List[Dict[str, Any]] = []
        # The device work of the timed calls since the last prepare, when the
        # judge asked for it (kernel_clock.py).
        self.clock: Any = None
        self.event_ms: List[float] = []
        # Triton's compiles in this runner (the compiles op): a diagnostic
        # the judge records with the verdict, never a check.
        self.compiles: Dict[str, Any] = {"compiled": 0, "cache_hits": 0, "seconds": 0.0}
        self.calls = 0  # calls served (KAGENT_TRACE's first-call lines)

    # -- helpers --

    def _tensor(self, spec: Dict[str, Any], mirror: bool = True) -> Any:
        """The tensor a spec names. The same buffer seen the same way is the
        same tensor object on every call, as a caller reusing its buffers
        would pass it (a result cached by identity then shows as stale). On
        a GPU, inputs are device copies of the slots (mirrors), refreshed
        when the judge reports a slot written; outputs (mirror=False) are the
        slots themselves, written across the bus."""
        from .shm import dtype_of, view_of

        sid = int(spec["slot"])
        key = (sid, tuple(int(x) for x in spec["shape"]), tuple(int(x) for x in spec["stride"]), str(spec["dtype"]))
        t = self.views.get(key)
        if t is None:
            entry = self.slots.get(sid)
            if entry is None:
                raise _Failure("bad_request", f"unknown slot {spec.get('slot')}")
            t = view_of(entry[0], key[1], key[2], dtype_of(key[3]))
            self.views[key] = t
        if not (mirror and self.mirror) or t.device.type != "cpu":
            # Output slots, and device slots (the judge's own device memory,
            # mapped here): used as they are.
            return t
        m = self.mirrors.get(key)
        if m is None:
            need = int(t.untyped_storage().nbytes())
            if self.device.is_gpu and self.device.free_memory() < need + MIRROR_HEADROOM:
                self._evict()
            try:
                m = self.torch.empty_strided(key[1], key[2], dtype=t.dtype, device=self.device.torch_device)
            except self.torch.OutOfMemoryError:
                if not self._evict():
                    raise
                m = self.torch.empty_strided(key[1], key[2], dtype=t.dtype, device=self.device.torch_device)
            m.copy_(t)
            self.mirrors[key] = m
        self.used.add(key)
        return m

    def _evict(self) -> bool:
        """Free the device copies the current request does not use (their
        slots hold what they held: inputs written by a call were copied
        back after it). A buffer seen again gets a new copy, and a new
        tensor object. True if anything was freed."""
        stale = [k for k in self.mirrors if k not in self.used]
        for k in stale:
            del self.mirrors[k]
        if stale:
            import gc

            gc.collect()
            self.device.empty_cache()
        return bool(stale)

    def _trim(self) -> None:
        """Before a call: when the device is nearly full, the mirrors this
        request does not use make room for what the call allocates."""
        if self.device.is_gpu and self.mirrors and self.device.free_memory() < self.device_bytes * TRIM_FRACTION:
            self._evict()

    def _refresh(self, dirty: List[Any]) -> None:
        """Copy the slots the judge wrote into their device mirrors."""
        if not dirty or not self.mirrors:
            return
        stale = {int(x) for x in dirty}
        for key, m in self.mirrors.items():
            if key[0] in stale:
                m.copy_(self.views[key])
        self.device.synchronize()

    def _write_back(self, keys: Any = None) -> None:
        """Copy device mirrors back to their slots, so that the judge sees
        what the candidate wrote to its inputs."""
        for key in (self.used if keys is None else keys):
            m = self.mirrors.get(key)
            if m is not None:
                self.views[key].copy_(m)
        self.device.synchronize()

    def _arg(self, spec: Any) -> Any:
        if isinstance(spec, dict) and "t" in spec:
            return self._tensor(spec["t"])
        if isinstance(spec, dict) and "v" in spec:
            return spec["v"]
        if isinstance(spec, dict) and "seq" in spec:
            items = [self._arg(x) for x in spec["seq"]]
            return tuple(items) if spec.get("tuple") else items
        raise _Failure("bad_request", "an argument is neither a tensor nor a value")

    def _args(self, specs: List[Any]) -> List[Any]:
        return [self._arg(s) for s in specs]

    def _fn(self, label: str) -> Callable[..., Any]:
        fn = self.callables.get(label)
        if fn is None:
            raise _Failure("bad_request", f"no callable built for shape set {label!r}")
        return fn

    def _before_import(self, req: Dict[str, Any]) -> None:
        """What an op that imports candidate code does first: confine this
        process (it signals no other: confine.py), then take the problem's
        TF32 policy and dtype."""
        from . import confine
        from .loading import apply_tf32
        from .shm import dtype_of

        try:
            confine.before_candidate()
        except confine.Unavailable as exc:
            raise _Failure("startup", f"the candidate's process cannot be confined ({exc}): the sandbox needs "
                           "seccomp filters (see kagent doctor), or KAGENT_SANDBOX=off runs candidates "
                           "unsandboxed") from None
        tf32 = str(req.get("tf32") or "forbid")
        apply_tf32(tf32)
        self.guard.expect_tf32(tf32)
        self.dtype = dtype_of(req["dtype"]) if req.get("dtype") else None

    def _check_guard(self, when: str) -> None:
        changed = self.guard.check()
        if changed:
            raise _Failure("tamper", f"{when} tampered with the runner's harness: {changed}")

    def _classified(self, exc: BaseException, what: str) -> _Failure:
        from .failures import CUDA_ERROR, EXCEPTION, OOM, classify, describe

        kind, _fatal = classify(exc)
        if self.device.is_gpu and kind == EXCEPTION and self.device.health_check():
            kind = CUDA_ERROR
        message = f"{what} raised {describe(exc)}"
        if kind == OOM and self.device.is_gpu:
            # What the candidate's process held at its peak (its runner goes
            # with the failure; the judge and the run go on).
            peak = self.device._api().max_memory_reserved(self.device.torch_device)
            message = f"{message} (the candidate's process reserved {peak / 2**30:.1f} GiB of device memory at its peak)"
        return _Failure(kind, message)

    def _describe_out(self, out: Any, dests: List[Any], counter: List[int]) -> Dict[str, Any]:
        torch = self.torch
        if out is None:
            return {"kind": "none"}
        if isinstance(out, torch.Tensor):
            k = counter[0]
            counter[0] += 1
            meta = {
                "kind": "tensor",
                "i": k,
                "shape": list(out.shape),
                "dtype": str(out.dtype).replace("torch.", ""),
                "device": out.device.type,
                "plain": type(out) is torch.Tensor,
                "copied": False,
            }
            # The destination is the judge's host buffer; on a GPU the copy
            # crosses the bus. An output on another device than the run's is
            # not copied, and the judge names its device.
            dest = dests[k] if k < len(dests) else None
            if dest is not None and meta["plain"] and tuple(dest.shape) == tuple(out.shape) and dest.dtype == out.dtype \
                    and out.device.type == self.device.torch_device.type:
                with torch.no_grad():
                    dest.copy_(out)
                meta["copied"] = True
            return meta
        if isinstance(out, (tuple, list)):
            return {"kind": "seq", "tuple": isinstance(out, tuple),
                    "items": [self._describe_out(x, dests, counter) for x in out]}
        if isinstance(out, (bool, int, float)) and not isinstance(out, torch.Tensor):
            v = float(out)
            return {"kind": "value", "v": out if math.isfinite(v) else None, "type": type(out).__name__}
        return {"kind": "other", "type": type(out).__name__}

    # -- ops --

    def op_slots(self, req: Dict[str, Any], fds: List[int]) -> Dict[str, Any]:
        from .shm import open_slot

        for desc in req.get("slots") or []:
            self.slots[int(desc["id"])] = open_slot(desc, fds, lock=self.device.is_cuda)
        for sid in req.get("drop") or []:
            self.slots.pop(int(sid), None)
            for key in [k for k in self.views if k[0] == int(sid)]:
                del self.views[key]
                self.mirrors.pop(key, None)
        return {}

    def op_load(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        from .candidate import find_entry, import_candidate
        from .failures import CheckFailure
        from .ttir import listen_compiles

        self._before_import(req)
        # The judge sends the source: the runner needs no view of the judge's
        # files. Triton reads kernels' source from the file, so it is written
        # to a private folder under the candidate's own name.
        import tempfile

        name = os.path.basename(str(req.get("name") or "kernel.py")) or "kernel.py"
        if not name.endswith(".py"):
            name += ".py"
        folder = tempfile.mkdtemp(prefix="candidate-")
        self.path = os.path.join(folder, name)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(str(req.get("source") or ""))
        listen_compiles(self.compiles)
        try:
            self.module = import_candidate(self.path)
            self._check_guard(f"importing {os.path.basename(self.path)}")
            self.entry = find_entry(self.module, self.path, str(req.get("entry") or ""))
        except CheckFailure as f:
            raise _Failure(f.name, f.reason) from None
        return {"entry": self.entry}

    def op_build(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        self.callables[str(req["label"])] = self._build(req)
        return {}

    def _build(self, req: Dict[str, Any]) -> Callable[..., Any]:
        """The loaded candidate's callable for one shape set (init inputs
        and the reference's weights in the request)."""
        from .candidate import ENTRY_FUNCTION, ENTRY_MODEL, weights_mismatch
        from .failures import ENTRY, classify, describe
        from .loading import seed_all

        torch = self.torch
        init = self._args(req.get("init") or [])
        base = os.path.basename(self.path)
        if self.entry == ENTRY_FUNCTION:
            kf = getattr(self.module, ENTRY_FUNCTION)

            def call(*inputs: Any) -> Any:
                return kf(*inputs, *init)

            return call
        cls = getattr(self.module, ENTRY_MODEL)
        # A seed unrelated to the one the reference's weights were drawn with:
        # a ModelNew that ignores the weights it is given cannot match them.
        seed_all(random.SystemRandom().randrange(1, 1 << 31))
        try:
            with self.device.default_device():
                model = cls(*init)
        except BaseException as exc:  # noqa: BLE001 - candidate code
            kind, _ = classify(exc)
            raise _Failure(kind if kind != "exception" else ENTRY, f"{base}: ModelNew(*init_inputs) raised {describe(exc)}") from None
        if not isinstance(model, torch.nn.Module):
            raise _Failure(ENTRY, f"{base}: ModelNew must be a torch.nn.Module subclass, got {type(model).__name__}")
        weights = {str(w["name"]): self._tensor(w["t"]).clone() for w in req.get("weights") or []}
        try:
            result = model.load_state_dict(weights, strict=False)
        except RuntimeError as exc:
            raise _Failure(ENTRY, f"{base}: ModelNew's parameters do not match Model's state_dict: {describe(exc)}") from None
        mismatch = weights_mismatch(base, result)
        if mismatch:
            raise _Failure(ENTRY, mismatch)
        try:
            model = model.to(self.device.torch_device)
            if self.dtype is not None:
                model = model.to(self.dtype)
        except BaseException as exc:  # noqa: BLE001
            kind, _ = classify(exc)
            raise _Failure(kind if kind != "exception" else ENTRY, f"moving ModelNew to the device: {describe(exc)}") from None
        self._check_guard(f"building {base}'s ModelNew")
        return model

    def op_precompile(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        """Screening (screen.py): import and build each variant of a batch,
        record one call's Triton launches without running them (ttir.py),
        then compile every recorded launch at once on ``threads`` threads
        into its kernel's own cache. ``select`` then makes one variant the
        loaded candidate; its first call finds its kernels compiled."""
        import tempfile

        from .candidate import find_entry, import_candidate
        from .failures import CheckFailure
        from .ttir import LaunchRecorder, precompile

        torch = self.torch
        self._before_import(req)
        # The timed shape first; each shape's build and arguments. A variant
        # that cannot be built or called at a held-out shape is not refused
        # here: the screen's own call at that shape reports it.
        shapes = [dict(sh, args=self._args(sh.get("args") or [])) for sh in (req.get("shapes") or [req])]
        t0 = time.perf_counter()
        self.variants = []
        launches: List[Any] = []
        replies: List[Dict[str, Any]] = []
        for i, v in enumerate(req.get("variants") or []):
            name = os.path.basename(str(v.get("name") or "kernel.py")) or "kernel.py"
            if not name.endswith(".py"):
                name += ".py"
            path = os.path.join(tempfile.mkdtemp(prefix=f"variant-{i}-"), name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(str(v.get("source") or ""))
            self.path, self.module, self.callables = path, None, {}
            try:
                self.module = import_candidate(path)
                self._check_guard(f"importing {name}")
                self.entry = find_entry(self.module, path, str(req.get("entry") or ""))
                fn = self._build(shapes[0])
            except CheckFailure as f:
                replies.append({"error": {"kind": f.name, "message": f.reason}})
                self.variants.append({})
                continue
            except _Failure as f:
                if f.kind == "tamper":
                    raise
                replies.append({"error": {"kind": f.kind, "message": f.message}})
                self.variants.append({})
                continue
            rec = LaunchRecorder()
            for k, sh in enumerate(shapes):
                if k > 0:
                    try:
                        fn = self._build(sh)
                    except _Failure as f:
                        if f.kind == "tamper":
                            raise
                        continue
                with rec:
                    try:
                        with torch.no_grad():
                            fn(*sh["args"])
                    except Exception:  # noqa: BLE001 - candidate code; the launches recorded still count
                        pass
                self._check_guard(f"{name}'s recorded call")
                del fn
            launches += rec.launches
            self.variants.append({"module": self.module, "entry": self.entry, "path": path})
            replies.append({"launches": len(rec.launches)})
        t1 = time.perf_counter()
        compiled = precompile(launches, max(1, int(req.get("threads") or 1)))
        self._check_guard("compiling the variants")
        self.module, self.callables = None, {}
        return {"variants": replies, "compiled": compiled, "load_s": t1 - t0, "compile_s": time.perf_counter() - t1}

    def op_select(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        """Make variant ``variant`` of the last precompile the loaded
        candidate, built for shape set ``label``."""
        i = int(req.get("variant", -1))
        v = self.variants[i] if 0 <= i < len(self.variants) else {}
        if not v:
            raise _Failure("bad_request", f"variant {i} is not loaded")
        self.module, self.entry, self.path = v["module"], v["entry"], v["path"]
        self.callables = {}
        self.kept.clear()
        self.last_out = None
        self.callables[str(req["label"])] = self._build(req)
        return {}

    def op_call(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        from .device import tensors_of
        from .launches import LaunchCounter, launch_support
        from .poison import poison_free_memory, poisoned_allocations

        torch = self.torch
        fn = self._fn(str(req["label"]))
        args = self._args(req.get("args") or [])
        dests = [self._tensor(d, mirror=False) if d else None for d in req.get("out") or []]
        self._trim()
        poison = bool(req.get("poison"))
        counter = None
        if req.get("count") and launch_support()[0]:
            counter = LaunchCounter()
        like = [torch.empty(int(n), dtype=torch.uint8, device="meta") for n in req.get("like") or []]
        marks = [time.monotonic()] if TRACE else []
        try:
            if poison:
                poison_free_memory(self.device, like)
            if TRACE:
                self.device.synchronize()
                marks.append(time.monotonic())
            with torch.no_grad():
                with poisoned_allocations() if poison else contextlib.nullcontext():
                    with counter if counter is not None else contextlib.nullcontext():
                        out = fn(*args)
                        self.device.synchronize()
        except _Failure:
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit, MemoryError, CUDA errors ...
            failure = self._classified(exc, str(req.get("what") or "the call"))
            if getattr(exc, "name", "") == "tamper":
                failure = _Failure("tamper", str(exc))
            raise failure from None
        self._check_guard("the call")
        if TRACE:
            marks.append(time.monotonic())
        meta = self._describe_out(out, dests, [0])
        self.device.synchronize()
        self._write_back()
        if TRACE:
            # Where a call's time went (the runner's first call apart: it
            # pays for what later calls find ready), for scripts/trace_summary.py.
            marks.append(time.monotonic())
            self.calls += 1
            name = "call1" if self.calls == 1 else "calln"
            for part, began, ended in zip(("poison", "run", "out"), marks, marks[1:]):
                _log(f"trace op {name}_{part} {ended - began:.4f} s")
        # The outputs of verification calls stay alive here until the judge
        # releases them, as a caller holding its results would keep them: a
        # later call that returns one of these buffers again shows the same
        # address (the judge's caching check).
        ptrs = []
        inputs = {int(a.untyped_storage().data_ptr()) for a in tensors_of(args)}
        for t in tensors_of(out):
            # An output in an input's buffer (an in-place kernel's) is not a
            # reused output buffer.
            aliased = int(t.untyped_storage().data_ptr()) in inputs
            ptrs.append(int(t.data_ptr()) if t.numel() and not aliased else 0)
            if req.get("keep"):
                self.kept.append(t)
        return {"out": meta, "launches": counter.count if counter is not None else None, "ptrs": ptrs}

    def op_fingerprint(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        """The candidate's code fingerprint from one call whose Triton
        launches are recorded, not run (ttir.py)."""
        from .candidate import read_source
        from .ttir import fingerprint_call

        fn = self._fn(str(req["label"]))
        args = self._args(req.get("args") or [])
        with self.torch.no_grad():
            out = fingerprint_call(self.module, read_source(self.path), lambda: fn(*args))
        self._check_guard("the fingerprint call")
        return out

    def op_release(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        self.kept.clear()
        return {}

    def _flush(self) -> None:
        if self.flush is not None:
            self.flush.zero_()

    def op_prepare(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        from .device import perf_counter

        torch, dev = self.torch, self.device
        fn = self._fn(str(req["label"]))
        sets = [self._args(s) for s in req.get("sets") or []]
        if not sets:
            raise _Failure("bad_request", "prepare needs input sets")
        self._trim()
        flush_bytes = int(req.get("flush_bytes") or 0)
        if dev.is_gpu and flush_bytes > 0 and (self.flush is None or self.flush.numel() * 4 < flush_bytes):
            self.flush = torch.empty(max(1, flush_bytes // 4), dtype=torch.int32, device=dev.torch_device)
        estimate_calls = max(1, int(req.get("estimate_calls") or 5))
        warmup_ms = float(req.get("warmup_ms") or 0.0)
        began = time.monotonic() if TRACE else 0.0
        try:
            with torch.no_grad():
                fn(*sets[0])
                dev.synchronize()
                if TRACE:
                    # The first call (a compile or a load, the first launch)
                    # apart from the calls that size the warm-up.
                    _log(f"trace op prepare_first {time.monotonic() - began:.4f} s")
                marks = []
                hosts = []
                for i in range(estimate_calls):
                    self._flush()
                    a, b = dev.event(), dev.event()
                    t0 = perf_counter()
                    dev.record(a)
                    fn(*sets[i % len(sets)])
                    dev.record(b)
                    hosts.append((perf_counter() - t0) * 1e3)
                    marks.append((a, b))
                dev.synchronize()
                estimate = max(1e-4, sum(dev.elapsed_ms(a, b) for a, b in marks) / len(marks))
                warm = max(1, min(100000, int(math.ceil(warmup_ms / estimate))))
                for i in range(warm):
                    fn(*sets[i % len(sets)])
                dev.synchronize()
        except _Failure:
            raise
        except BaseException as exc:  # noqa: BLE001
            raise self._classified(exc, "the call") from None
        self._check_guard("the warm-up")
        reply: Dict[str, Any] = {"estimate_ms": estimate, "warmup_calls": warm, "host_ms": max(hosts)}
        reply.update(self._start_clock(str(req.get("clock") or "")))
        return reply

    def _start_clock(self, want: str) -> Dict[str, Any]:
        """Record the timed calls that follow (kernel_clock.py), if asked."""
        from . import kernel_clock

        if self.clock is not None:
            self.clock.close()
            self.clock = None
        self.event_ms = []
        if want != kernel_clock.PROFILER:
            return {}
        clock = kernel_clock.CallClock()
        if not clock.start():
            return {"clock_error": clock.error}
        self.clock = clock
        return {"clock": kernel_clock.PROFILER}

    def op_clock_spans(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        """The timed calls' device spans since the last prepare (ms), or why not."""
        clock, self.clock = self.clock, None
        if clock is None:
            return {"spans": None, "why": "the runner was not recording"}
        spans, why = clock.spans(self.event_ms)
        return {"spans": spans, "why": why}

    def op_timed(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        import torch

        from .device import perf_counter

        dev = self.device
        fn = self._fn(str(req["label"]))
        args = self._args(req.get("args") or [])
        dests = [self._tensor(d, mirror=False) if d else None for d in req.get("out") or []]
        self.last_out = None
        self._trim()
        spin_ms = float(req.get("spin_ms") or 0.0)
        flush = self.flush if req.get("flush") and dev.is_gpu else None
        try:
            with torch.no_grad():
                dev.synchronize()
                if spin_ms > 0 or flush is not None:
                    dev.spin(spin_ms if dev.can_spin else 0.0, flush)
                a, b = dev.event(), dev.event()
                t0 = perf_counter()
                dev.record(a)
                out = fn(*args)
                dev.record(b)
                host = (perf_counter() - t0) * 1e3
                tail = dev.tail_ms(b)
                dev.synchronize()
                ms = dev.elapsed_ms(a, b)
                if self.clock is not None:
                    self.clock.mark()
                    self.event_ms.append(ms)
        except _Failure:
            raise
        except BaseException as exc:  # noqa: BLE001
            raise self._classified(exc, str(req.get("what") or "a timed call")) from None
        reply: Dict[str, Any] = {"ms": ms, "host_ms": host, "tail_ms": tail}
        # What this process's tensors hold once the call is done: the judge
        # looks for a leak (timing_stats.leak_reason); None off a GPU.
        reply["allocated"] = dev.allocated_bytes()
        if dests:
            reply["out"] = self._describe_out(out, dests, [0])
            dev.synchronize()
        elif req.get("keep"):
            self.last_out = out
        if req.get("sync_back"):
            self._write_back()
        return reply

    def op_last_out(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        """The last timed call's output, copied to the judge's buffers (and,
        with sync_back, the inputs it wrote); then dropped."""
        dests = [self._tensor(d, mirror=False) if d else None for d in req.get("out") or []]
        out, self.last_out = self.last_out, None
        reply = {"out": self._describe_out(out, dests, [0])}
        self.device.synchronize()
        if req.get("sync_back"):
            self._write_back()
        return reply

    def op_sync_back(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        self._write_back(list(self.mirrors))
        return {}

    def op_burst(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        import torch

        dev = self.device
        fn = self._fn(str(req["label"]))
        sets = [self._args(s) for s in req.get("sets") or []]
        # calls == 0: the request's own cost (arguments, synchronisation,
        # the guard's check), which the judge subtracts from its clock.
        self._trim()
        calls = max(0, int(req.get("calls", 1) or 0))
        spin_ms = float(req.get("spin_ms") or 0.0)
        try:
            with torch.no_grad():
                dev.synchronize()
                if spin_ms > 0:
                    dev.spin(spin_ms)
                a, b = dev.event(), dev.event()
                dev.record(a)
                for j in range(calls):
                    fn(*sets[j % len(sets)])
                dev.record(b)
                tail = dev.tail_ms(b)
                dev.synchronize()
        except _Failure:
            raise
        except BaseException as exc:  # noqa: BLE001
            raise self._classified(exc, "the call") from None
        self._check_guard("the timed calls")
        # Work the calls left running after the end event is their time too.
        return {"event_ms": dev.elapsed_ms(a, b) + tail}

    def op_compiles(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        return dict(self.compiles)

    def op_ping(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        self.device.synchronize()
        return {}

    def op_usertest(self, req: Dict[str, Any], _fds: List[int]) -> Dict[str, Any]:
        from .usertest import run_sources

        if self.module is not None:
            raise _Failure("bad_request", "the user test runs only in a runner that imported no candidate")
        ok, reason = run_sources(str(req.get("test") or ""), str(req.get("kernel") or ""),
                                 str(req.get("problem") or ""), float(req.get("timeout_s") or 300.0))
        return {"passed": ok, "reason": reason}

    def serve(self) -> int:
        from .link import LinkClosed

        ops = {
            "slots": self.op_slots,
            "load": self.op_load,
            "build": self.op_build,
            "call": self.op_call,
            "prepare": self.op_prepare,
            "timed": self.op_timed,
            "last_out": self.op_last_out,
            "burst": self.op_burst,
            "ping": self.op_ping,
            "release": self.op_release,
            "fingerprint": self.op_fingerprint,
            "sync_back": self.op_sync_back,
            "usertest": self.op_usertest,
            "precompile": self.op_precompile,
            "select": self.op_select,
            "clock_spans": self.op_clock_spans,
            "compiles": self.op_compiles,
            # A spare's device context, made when the judge asks (spare.py).
            "context": lambda req, fds: {"made": self.device.make_context()},
        }
        while True:
            try:
                req, fds = self.link.recv()
            except LinkClosed:
                return 0
            op = str(req.get("op"))
            if op == "exit":
                return 0
            handler = ops.get(op)
            began = time.monotonic() if TRACE else 0.0
            try:
                if handler is None:
                    raise _Failure("bad_request", f"unknown op {op!r}")
                self.used = set()
                self._refresh(req.get("dirty") or [])
                reply: Dict[str, Any] = {"ok": handler(req, fds)}
            except _Failure as f:
                reply = {"error": {"kind": f.kind, "message": f.message}}
            except BaseException as exc:  # noqa: BLE001 - the runner replies, whatever happened
                _log(f"internal error in {op}:\n{traceback.format_exc()}")
                reply = {"error": {"kind": "internal", "message": f"{op}: {type(exc).__name__}: {exc}"}}
            finally:
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            if TRACE:
                _log(f"trace op {op} {time.monotonic() - began:.4f} s")
            try:
                self.link.send(reply)
            except LinkClosed:
                return 0
            if "error" in reply and reply["error"]["kind"] in ("tamper", "cuda_error"):
                return EXIT_TAMPER


def run(sock: Any, kind: str) -> int:
    """The runner's main, in a process forked for one candidate."""
    from .link import Link

    link = Link(sock)
    began = time.monotonic()
    try:
        runner = Runner(link, kind)
    except BaseException as exc:  # noqa: BLE001
        _log(f"start-up failed:\n{traceback.format_exc()}")
        try:
            link.send({"error": {"kind": "startup", "message": f"runner start-up failed: {type(exc).__name__}: {exc}"}})
        except Exception:  # noqa: BLE001
            pass
        return 70
    link.send({"ok": {"pid": os.getpid()}})
    if TRACE:
        _log(f"trace start {time.monotonic() - began:.4f} s")
    return runner.serve()
