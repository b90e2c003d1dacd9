"""The tamper guard: a snapshot of the identities (and a few values) of what the
harness relies on, taken before any candidate is imported and compared after
every import and every candidate call. Any difference rejects the candidate and
the worker is recycled (the process can no longer be trusted).
"""

from __future__ import annotations

import builtins
import json
import math
import os
import sys
import threading
import time
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from .launches import import_triton_parts, triton_module

_MISSING = object()

# (label, getter). Getters run at snapshot and check time; a getter that fails
# yields _MISSING, so optional things (triton, CUDA) are handled uniformly.
_Getter = Callable[[], Any]

_TENSOR_METHODS = (
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__", "__int__",
    "__sub__", "__abs__", "__getitem__", "__setitem__", "__torch_function__", "eq", "ne", "allclose",
    "isclose", "equal", "isnan", "isinf", "isfinite", "abs", "sub", "float", "double", "to", "clone",
    "copy_", "fill_", "zero_", "sum", "max", "min", "norm", "item", "tolist", "all", "any", "numel",
    "data_ptr", "view", "reshape", "contiguous", "detach", "element_size", "new_empty",
    "new_empty_strided", "cpu", "cuda", "is_floating_point", "is_complex", "size", "dim",
)

_TORCH_FUNCS = (
    "allclose", "isclose", "equal", "isnan", "isinf", "isfinite", "nan_to_num", "abs", "any", "all",
    "sum", "max", "min", "norm", "empty", "empty_like", "empty_strided", "zeros", "zeros_like",
    "ones", "full", "rand", "randn", "randint", "manual_seed", "no_grad", "view_as_real", "Tensor",
    "device", "float32", "float16", "bfloat16", "float64",
)


def _attr(obj: Any, path: str) -> _Getter:
    def get() -> Any:
        cur = obj
        for part in path.split("."):
            cur = getattr(cur, part)
        return cur

    return get


def _module_attr(module: str, path: str) -> _Getter:
    def get() -> Any:
        mod = sys.modules.get(module)
        if mod is None:
            return _MISSING
        return _attr(mod, path)()

    return get


def _seed_function() -> Any:
    """torch.manual_seed as first bound: the import of torch._dynamo wraps it
    (``torch._disable_dynamo``, which keeps the function in ``__wrapped__``)."""
    f = torch.manual_seed
    return getattr(f, "__wrapped__", f) if "torch._dynamo" in sys.modules else f


def _lazy_submodule(name: str) -> bool:
    """Whether torch.NAME is a submodule not imported yet (torch imports it
    when the attribute is first read)."""
    import importlib.util

    full = f"torch.{name}"
    if full in sys.modules:
        return False
    try:
        return importlib.util.find_spec(full) is not None
    except (ImportError, ValueError):
        return False


class Guard:
    """Snapshot of identities; ``check()`` returns the first difference.

    ``dynamo=False`` (a runner's guard, whose process never times a baseline)
    leaves torch._dynamo unimported, which saves its import (seconds of CPU)
    in every runner server; torch.manual_seed is then watched through the
    wrapper that import puts around it, so a later lazy import of torch._dynamo
    is not a change (nor is any wrapper that keeps the original function in
    ``__wrapped__``: in a runner, which holds no seed the judge relies on,
    that costs nothing)."""

    def __init__(self, dynamo: bool = True) -> None:
        # Triton's watched submodules must be imported before the baseline, or
        # their lazy import later would look like a replacement.
        if triton_module() is not None:
            import_triton_parts()
        # torch._dynamo rebinds torch.manual_seed when it is first imported, and
        # torch imports it lazily (torch.compile, FLOP counting, some Triton
        # paths): import it now so that the baseline holds the rebound one.
        self._dynamo = dynamo
        if dynamo:
            _import_optional("torch._dynamo")
        _install_start_hook()
        self._threads: Dict[int, threading.Thread] = {}
        self._getters: List[Tuple[str, _Getter, bool]] = []  # (label, getter, by_value)
        self._baseline: Dict[str, Any] = {}
        self._register()
        self.reset()

    # What is watched ------------------------------------------------------------

    def _register(self) -> None:
        add = self._add
        for name in sorted(set(_TORCH_FUNCS) | set(_harness_torch_names())):
            if not self._dynamo:
                if name == "manual_seed":
                    add("torch.manual_seed", _seed_function)
                    continue
                if _lazy_submodule(name):
                    continue  # reading it would import it (torch._dynamo itself, say)
            add(f"torch.{name}", _attr(torch, name))
        dunders = {n for cls in torch.Tensor.__mro__[:-1] for n in vars(cls) if n.startswith("__") and n.endswith("__")}
        for name in sorted(set(_TENSOR_METHODS) | dunders - {"__dict__", "__weakref__", "__doc__", "__module__"}):
            add(f"torch.Tensor.{name}", _attr(torch.Tensor, name))
        add("torch.testing.assert_close", _attr(torch, "testing.assert_close"))
        add("torch.nn.Module.__call__", _attr(torch.nn.Module, "__call__"))
        add("torch.nn.Module._call_impl", _attr(torch.nn.Module, "_call_impl"))
        add("torch.nn.Module.load_state_dict", _attr(torch.nn.Module, "load_state_dict"))
        add("torch.nn.Module.state_dict", _attr(torch.nn.Module, "state_dict"))
        add("torch.nn.Module.to", _attr(torch.nn.Module, "to"))
        for hooks in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks"):
            add(f"torch.nn.modules.module.{hooks}", _len_of("torch.nn.modules.module", hooks), by_value=True)
        add("torch.linalg.vector_norm", _attr(torch, "linalg.vector_norm"))
        add("torch.backends.cuda.matmul.allow_tf32", _attr(torch, "backends.cuda.matmul.allow_tf32"), by_value=True)
        add("torch.backends.cudnn.allow_tf32", _attr(torch, "backends.cudnn.allow_tf32"), by_value=True)
        add("torch.get_default_dtype()", lambda: torch.get_default_dtype(), by_value=True)
        # The cpu device's clock is process CPU time with torch on one thread:
        # more threads would change what later timings (the baselines) count.
        add("torch.get_num_threads()", lambda: torch.get_num_threads(), by_value=True)
        if hasattr(torch, "cuda"):
            for name in ("Event", "Event.record", "Event.elapsed_time", "Event.synchronize", "synchronize",
                         "current_stream", "empty_cache", "mem_get_info", "memory_reserved",
                         "memory_allocated", "memory_snapshot", "is_available", "get_device_properties", "_sleep"):
                add(f"torch.cuda.{name}", _attr(torch.cuda, name))
        for name in ("perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "time", "time_ns",
                     "monotonic", "monotonic_ns", "sleep"):
            add(f"time.{name}", _attr(time, name))
        add("json.dumps", _attr(json, "dumps"))
        add("json.loads", _attr(json, "loads"))
        add("math.isfinite", _attr(math, "isfinite"))
        add("math.sqrt", _attr(math, "sqrt"))
        for name in ("write", "read", "dup", "dup2", "_exit", "getpid"):
            add(f"os.{name}", _attr(os, name))
        for name in ("torch", "triton", "time", "json", "os", "math", "builtins"):
            add(f"sys.modules[{name!r}]", _sys_module(name))
        add("sys.gettrace()", lambda: sys.gettrace(), by_value=True)
        add("sys.getprofile()", lambda: sys.getprofile(), by_value=True)
        add("sys.stdin", lambda: sys.stdin)
        add("threading.Thread.start", _attr(threading.Thread, "start"))
        # Triton (when importable): do_bench, jit, and the launch hooks.
        add("triton.testing.do_bench", _module_attr("triton.testing", "do_bench"))
        add("triton.jit", _module_attr("triton", "jit"))
        add("triton.runtime.jit.JITFunction.run", _module_attr("triton.runtime.jit", "JITFunction.run"))
        add("triton.runtime.interpreter.InterpretedFunction.run",
            _module_attr("triton.runtime.interpreter", "InterpretedFunction.run"))
        add("triton launch_enter_hook", _launch_hook_state("launch_enter_hook"), by_value=True)
        add("triton launch_exit_hook", _launch_hook_state("launch_exit_hook"), by_value=True)

    def expect_tf32(self, policy: str) -> None:
        """The harness just applied a TF32 policy: expect its values from now on."""
        allow = policy == "allow"
        for label in ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32"):
            if self._baseline.get(label, _MISSING) is not _MISSING:
                self._baseline[label] = allow

    def _add(self, label: str, getter: _Getter, by_value: bool = False) -> None:
        self._getters.append((label, getter, by_value))

    def watch(self, label: str, getter: _Getter, by_value: bool = False) -> None:
        """Watch one more thing from now on (e.g. a loaded problem's Model.forward)."""
        self._add(label, getter, by_value)
        self._baseline[label] = _safe(getter)

    def unwatch(self, prefix: str) -> None:
        """Stop watching the labels that start with prefix (an unloaded problem)."""
        self._getters = [g for g in self._getters if not g[0].startswith(prefix)]
        for label in [k for k in self._baseline if k.startswith(prefix)]:
            del self._baseline[label]

    # Snapshot and check ---------------------------------------------------------

    def _dynamic(self) -> Dict[str, Any]:
        """Builtins and the harness's own modules, read in full each time: their
        functions and modules, the attributes of the classes they define
        (methods such as a timer's or a verifier's), and their constants
        (UPPER_CASE names, by value: a tolerance table changed in place counts)."""
        snap: Dict[str, Any] = {}
        for key, val in vars(builtins).items():
            snap[f"builtins.{key}"] = val
        for modname, mod in list(sys.modules.items()):
            if modname == "kagent_harness" or modname.startswith("kagent_harness."):
                snap[f"sys.modules[{modname!r}]"] = mod
                if mod is None:
                    continue
                for key, val in list(vars(mod).items()):
                    if isinstance(val, type) and getattr(val, "__module__", None) == modname:
                        for attr, member in list(vars(val).items()):
                            if attr not in ("__dict__", "__weakref__", "__doc__"):
                                snap[f"{modname}.{key}.{attr}"] = member
                    if callable(val) or isinstance(val, type(sys)):
                        snap[f"{modname}.{key}"] = val
                    elif _is_constant(key):
                        snap[f"{modname}.{key}{_BY_VALUE}"] = (id(val), _frozen(val))
        return snap

    def _current(self) -> Dict[str, Any]:
        snap = {label: _safe(getter) for label, getter, _ in self._getters}
        snap.update(self._dynamic())
        return snap

    def reset(self) -> None:
        """Take (or retake) the baseline. Only the worker calls this, at start and
        after trusted operations (e.g. torch.compile of a baseline)."""
        self._baseline = self._current()
        self._threads = {t.ident or 0: t for t in threading.enumerate()}

    def accept_threads(self) -> None:
        """Accept the threads alive now (after trusted code ran, such as the
        reference problem's module)."""
        for t in threading.enumerate():
            self._threads[t.ident or 0] = t

    def _foreign_thread(self) -> Optional[str]:
        """A thread started since the baseline by code that is not installed
        (a candidate's), or running such code. Threads that torch, Triton or
        the packages they use start for themselves (compile workers, pools,
        progress monitors) are accepted."""
        roots = _roots()
        for t in threading.enumerate():
            if self._threads.get(t.ident or 0) is t:
                continue
            for origin in _thread_origins(t):
                if not roots.trusted(origin):
                    return f"a thread was started by or runs code of {origin} ({t.name})"
            self._threads[t.ident or 0] = t
        return None

    def check(self) -> Optional[str]:
        """None if nothing changed, else a one-line description of the change."""
        by_value = {label for label, _, v in self._getters if v}
        current = self._current()
        for label, before in self._baseline.items():
            after = current.get(label, _MISSING)
            if label.endswith(_BY_VALUE):
                if not _same_value(before, after):
                    return f"{label[:-len(_BY_VALUE)]} (a harness constant) was changed"
            elif label in by_value:
                if not _same_value(before, after):
                    return f"{label} changed from {_short(before)} to {_short(after)}"
            elif after is not before:
                return f"{label} was replaced or removed"
        for label in current:
            # New builtins are suspicious; harness modules imported after the
            # baseline (tools other ops load lazily) are not.
            if label not in self._baseline and label.startswith("builtins."):
                return f"{label} was added"
        return self._foreign_thread()

    def changed_keys(self) -> List[str]:
        """Every label that differs from the baseline (for trusted refreshes)."""
        current = self._current()
        changed = []
        for label, before in self._baseline.items():
            after = current.get(label, _MISSING)
            if after is not before and not _same_value(before, after):
                changed.append(label)
        return changed


# Labels of harness constants, compared by value.
_BY_VALUE = " (value)"


def _is_constant(name: str) -> bool:
    bare = name.lstrip("_")
    return bool(bare) and bare.isupper()


def _frozen(val: Any) -> Any:
    """A comparable picture of a constant: containers by content."""
    if isinstance(val, dict):
        return ("dict", tuple((repr(k), _frozen(v)) for k, v in val.items()))
    if isinstance(val, (list, tuple)):
        return (type(val).__name__, tuple(_frozen(v) for v in val))
    if isinstance(val, (set, frozenset)):
        return (type(val).__name__, tuple(sorted(repr(v) for v in val)))
    if isinstance(val, (int, float, str, bytes, bool, type(None))):
        return val
    return ("object", id(val))


def _harness_torch_names() -> List[str]:
    """The torch functions and classes the harness's own code names
    (torch.NAME in its sources): the comparisons, timers and checks rely on them."""
    import re

    names = set()
    here = os.path.dirname(os.path.abspath(__file__))
    for fname in os.listdir(here):
        if fname.endswith(".py"):
            with open(os.path.join(here, fname), encoding="utf-8") as f:
                names.update(re.findall(r"\btorch\.([A-Za-z_][A-Za-z0-9_]*)\b", f.read()))
    return sorted(names)


def _import_optional(name: str) -> None:
    try:
        __import__(name)
    except Exception:  # noqa: BLE001 - absent in older torch
        pass


class _Roots:
    """Where trusted code lives: the standard library, installed packages
    (site-packages, dist-packages) and torch's, Triton's and the harness's
    folders (which may be source checkouts). A candidate's files are in none."""

    def __init__(self) -> None:
        import sysconfig

        std = set()
        for key in ("stdlib", "platstdlib"):
            path = sysconfig.get_paths().get(key)
            if path:
                std.add(os.path.realpath(path) + os.sep)
        self.stdlib = tuple(sorted(std))
        pkgs = set()
        for name in ("torch", "triton", "kagent_harness"):
            mod = sys.modules.get(name)
            path = getattr(mod, "__file__", None) if mod is not None else None
            if path:
                pkgs.add(os.path.realpath(os.path.dirname(path)) + os.sep)
        self.packages = tuple(sorted(pkgs))

    def in_stdlib(self, path: str) -> bool:
        """The standard library itself, not the packages installed below it."""
        return any(path.startswith(r) and not _installed(path) for r in self.stdlib)

    def trusted(self, path: str) -> bool:
        return (_installed(path) or any(path.startswith(r) for r in self.stdlib)
                or any(path.startswith(r) for r in self.packages))


def _installed(path: str) -> bool:
    return f"{os.sep}site-packages{os.sep}" in path or f"{os.sep}dist-packages{os.sep}" in path


_roots_cache: Optional[_Roots] = None


def _roots() -> _Roots:
    global _roots_cache
    if _roots_cache is None:
        _roots_cache = _Roots()
    return _roots_cache


def _starter() -> Optional[str]:
    """The first caller outside the standard library: who really started a
    thread that threading or concurrent.futures code starts on its behalf."""
    frame = sys._getframe(2)
    roots = _roots()
    while frame is not None:
        path = os.path.realpath(frame.f_code.co_filename)
        if not roots.in_stdlib(path):
            return path
        frame = frame.f_back
    return None


def _install_start_hook() -> None:
    """Record who starts each thread (threading.Thread.start, watched by the guard)."""
    if getattr(threading.Thread.start, "_kagent_hook", False):
        return
    original = threading.Thread.start

    def start(self: threading.Thread, *args: Any, **kwargs: Any) -> Any:
        self._kagent_starter = _starter()  # type: ignore[attr-defined]
        return original(self, *args, **kwargs)

    start._kagent_hook = True  # type: ignore[attr-defined]
    threading.Thread.start = start  # type: ignore[method-assign]


def _thread_origins(t: threading.Thread) -> List[str]:
    """Real paths of the code that started thread t and of the code it runs
    (either may be unknown, e.g. for threads started outside threading)."""
    out = []
    starter = getattr(t, "_kagent_starter", None)
    if starter:
        out.append(starter)
    fn: Any = getattr(t, "_target", None)
    if fn is None:
        run = getattr(type(t), "run", None)
        fn = run if run is not None and run is not threading.Thread.run else None
    for _ in range(8):  # unwrap partials, bound methods and decorators
        if fn is None:
            break
        inner = getattr(fn, "func", None) or getattr(fn, "__func__", None) or getattr(fn, "__wrapped__", None)
        if inner is None:
            break
        fn = inner
    code = getattr(fn, "__code__", None) if fn is not None else None
    if code is None and fn is not None:
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)
    if code is not None:
        out.append(os.path.realpath(code.co_filename))
    return out


def _safe(getter: _Getter) -> Any:
    try:
        value = getter()
    except Exception:  # noqa: BLE001 - absent optional attributes
        return _MISSING
    # Bound methods (classmethods such as Tensor.__torch_function__) are new
    # objects on every access: watch the function they wrap.
    if isinstance(value, types.MethodType):
        return value.__func__
    return value


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) if not (a is _MISSING or b is _MISSING) else a is b
    except Exception:  # noqa: BLE001
        return a is b


def _short(v: Any) -> str:
    if v is _MISSING:
        return "<missing>"
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _len_of(module: str, name: str) -> _Getter:
    def get() -> Any:
        mod = sys.modules.get(module)
        if mod is None:
            return _MISSING
        return len(getattr(mod, name))

    return get


def _sys_module(name: str) -> _Getter:
    return lambda: sys.modules.get(name, _MISSING)


def _launch_hook_state(name: str) -> _Getter:
    """The current launch hook as a comparable value: the tuple of hooks in a
    Triton HookChain, or the hook object itself (older Triton)."""

    def get() -> Any:
        knobs = sys.modules.get("triton.knobs")
        holder: Any = None
        if knobs is not None and hasattr(getattr(knobs, "runtime", None), name):
            holder = getattr(knobs.runtime, name)
        else:
            compiler = sys.modules.get("triton.compiler.compiler")
            if compiler is None or not hasattr(getattr(compiler, "CompiledKernel", None), name):
                return _MISSING
            holder = getattr(compiler.CompiledKernel, name)
        calls = getattr(holder, "calls", None)
        if isinstance(calls, list):
            return ("chain", tuple(id(c) for c in calls))
        return ("hook", id(holder) if holder is not None else None)

    return get
