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


class Guard:
    """Snapshot of identities; ``check()`` returns the first difference."""

    def __init__(self) -> None:
        # Triton's watched submodules must be imported before the baseline, or
        # their lazy import later would look like a replacement.
        if triton_module() is not None:
            import_triton_parts()
        self._getters: List[Tuple[str, _Getter, bool]] = []  # (label, getter, by_value)
        self._baseline: Dict[str, Any] = {}
        self._register()
        self.reset()

    # What is watched ------------------------------------------------------------

    def _register(self) -> None:
        add = self._add
        for name in _TORCH_FUNCS:
            add(f"torch.{name}", _attr(torch, name))
        for name in _TENSOR_METHODS:
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
        if hasattr(torch, "cuda"):
            for name in ("Event", "Event.record", "Event.elapsed_time", "Event.synchronize", "synchronize",
                         "current_stream", "empty_cache", "mem_get_info", "memory_reserved",
                         "memory_allocated", "memory_snapshot", "is_available", "get_device_properties"):
                add(f"torch.cuda.{name}", _attr(torch.cuda, name))
        for name in ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "sleep"):
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
        add("threads", lambda: threading.active_count(), by_value=True)
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
        """Builtins and the harness's own modules, read in full each time."""
        snap: Dict[str, Any] = {}
        for key, val in vars(builtins).items():
            snap[f"builtins.{key}"] = val
        for modname, mod in list(sys.modules.items()):
            if modname == "kagent_harness" or modname.startswith("kagent_harness."):
                snap[f"sys.modules[{modname!r}]"] = mod
                if mod is None:
                    continue
                for key, val in vars(mod).items():
                    if callable(val) or isinstance(val, type(sys)):
                        snap[f"{modname}.{key}"] = val
        return snap

    def _current(self) -> Dict[str, Any]:
        snap = {label: _safe(getter) for label, getter, _ in self._getters}
        snap.update(self._dynamic())
        return snap

    def reset(self) -> None:
        """Take (or retake) the baseline. Only the worker calls this, at start and
        after trusted operations (e.g. torch.compile of a baseline)."""
        self._baseline = self._current()

    def check(self) -> Optional[str]:
        """None if nothing changed, else a one-line description of the change."""
        by_value = {label for label, _, v in self._getters if v}
        current = self._current()
        for label, before in self._baseline.items():
            after = current.get(label, _MISSING)
            if label in by_value:
                if not _same_value(before, after):
                    return f"{label} changed from {_short(before)} to {_short(after)}"
            elif after is not before:
                return f"{label} was replaced or removed"
        for label in current:
            # New builtins are suspicious; harness modules imported after the
            # baseline (tools other ops load lazily) are not.
            if label not in self._baseline and label.startswith("builtins."):
                return f"{label} was added"
        return None

    def changed_keys(self) -> List[str]:
        """Every label that differs from the baseline (for trusted refreshes)."""
        current = self._current()
        changed = []
        for label, before in self._baseline.items():
            after = current.get(label, _MISSING)
            if after is not before and not _same_value(before, after):
                changed.append(label)
        return changed


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
