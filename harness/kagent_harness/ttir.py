"""The ``ttir`` code fingerprint (see fingerprint.py): a candidate's Triton
launches recorded instead of run, each compiled to Triton IR for its launch."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from types import ModuleType, TracebackType
from typing import Any, Callable, Dict, List, Optional, Tuple, Type

from .failures import one_line
from .fingerprint import METHOD_TTIR, fingerprint_source, host_hash

# Launches recorded past this many are not compiled (a loop of launches):
# the count still enters the hash.
MAX_COMPILED = 32


class LaunchRecorder:
    """Replaces ``JITFunction.run`` and the interpreter's
    ``InterpretedFunction.run`` inside its block: each launch is recorded
    (function, arguments, options, grid) and not run."""

    def __init__(self) -> None:
        self.launches: List[Tuple[Any, Tuple[Any, ...], Dict[str, Any], Any]] = []
        self._undo: List[Callable[[], None]] = []

    def __enter__(self) -> "LaunchRecorder":
        for module, name in (("triton.runtime.jit", "JITFunction"), ("triton.runtime.interpreter", "InterpretedFunction")):
            cls = getattr(sys.modules.get(module), name, None)
            if cls is None or "run" not in vars(cls):
                continue
            original = vars(cls)["run"]
            recorder = self

            def run(this: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
                if not warmup:
                    recorder.launches.append((this, args, dict(kwargs), grid))
                return None

            setattr(cls, "run", run)
            self._undo.append(lambda cls=cls, original=original: setattr(cls, "run", original))
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        while self._undo:
            self._undo.pop()()


def fingerprint_call(module: ModuleType, source: str, call: Callable[[], Any]) -> Dict[str, Any]:
    """The ttir fingerprint of one call of the candidate (module, source),
    or its ast fingerprint with the reason when no launch was seen or a
    launch could not be compiled. The call's outputs are garbage (nothing is
    run); an exception after a launch was recorded is ignored."""
    rec = LaunchRecorder()
    err = ""
    with rec:
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - candidate code; what was launched still counts
            err = one_line(f"{type(exc).__name__}: {exc}")[:300]
    if not rec.launches:
        out = fingerprint_source(source)
        out["reason"] = "no Triton launch seen" + (f" (the call raised {err})" if err else "")
        return out
    try:
        return _ttir_fingerprint(module, source, rec.launches)
    except Exception as exc:  # noqa: BLE001 - an unknown Triton version or kernel: fall back
        out = fingerprint_source(source)
        out["reason"] = one_line(f"compiling to TTIR failed: {type(exc).__name__}: {exc}")[:500]
        return out


def _target() -> Any:
    from triton.backends.compiler import GPUTarget

    if os.environ.get("TRITON_INTERPRET", "") == "1":
        return GPUTarget("cuda", 90, 32)
    from triton.runtime import driver

    return driver.active.get_current_target()


def _ttir_fingerprint(module: ModuleType, source: str, launches: List[Any]) -> Dict[str, Any]:
    from triton.compiler.compiler import make_backend

    target = _target()
    backend = make_backend(target)
    parts: List[str] = [host_hash(source), str(len(launches))]
    names: List[str] = []
    with _Compilable(module):
        for fn, args, kwargs, grid in launches[:MAX_COMPILED]:
            ttir, options, bound = _compile(fn, args, kwargs, backend, target)
            if callable(grid):
                grid = grid(bound)
            names.append(str(getattr(fn, "__name__", "") or getattr(getattr(fn, "fn", None), "__name__", "")))
            parts += [normalize_ttir(ttir), json.dumps(options, sort_keys=True, default=str), repr(grid)]
    digest = hashlib.sha256("\n\0".join(parts).encode("utf-8")).hexdigest()
    return {"hash": digest, "method": METHOD_TTIR, "kernels": sorted(set(names)), "launches": len(launches),
            "target": f"{target.backend} {target.arch}"}


def _compile(fn: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any], backend: Any, target: Any) -> Tuple[str, Dict[str, Any], Any]:
    """TTIR of one launch, the launch's compile options and its bound args."""
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource
    from triton.runtime.jit import JITFunction, create_function_from_signature

    jf = fn if isinstance(fn, JITFunction) else JITFunction(fn.fn)
    kwargs = dict(kwargs)
    kwargs.setdefault("debug", False)
    binder = create_function_from_signature(jf.signature, jf.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = jf._pack_args(backend, kwargs, bound, specialization, options)
    src = ASTSource(jf, signature, constexprs, attrs)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    mod = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
    stages: Dict[str, Any] = {}
    backend.add_stages(stages, options, src.language)
    ttir = stages["ttir"](mod, {})
    opts = {k: v for k, v in sorted(vars(options).items()) if k not in ("debug", "sanitize_overflow")}
    return str(ttir), opts, bound


class _Compilable:
    """Under the interpreter, @triton.jit makes InterpretedFunctions, which
    the compiler cannot call: inside the block, those of triton.language and
    of the candidate's module are replaced by JITFunctions of the same code."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self._undo: List[Tuple[Dict[str, Any], str, Any]] = []

    def __enter__(self) -> "_Compilable":
        interp = getattr(sys.modules.get("triton.runtime.interpreter"), "InterpretedFunction", None)
        if interp is None:
            return self
        from triton.runtime.jit import JITFunction

        mods = [m for n, m in list(sys.modules.items()) if n.startswith("triton.language") and m is not None]
        for m in mods + [self.module]:
            d = vars(m)
            for k, v in list(d.items()):
                if isinstance(v, interp):
                    self._undo.append((d, k, v))
                    d[k] = JITFunction(v.fn)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        while self._undo:
            d, k, v = self._undo.pop()
            d[k] = v


_LOC_LINE = re.compile(r"^#loc.*$", re.M)
_LOC_ATTR = re.compile(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_VALUE = re.compile(r"%[\w.$#-]+")
_SYMBOL = re.compile(r"@[\w.$-]+")


def normalize_ttir(text: str) -> str:
    """TTIR without source locations, with values and symbols renamed in
    order of first appearance (the source's names do not count)."""
    text = _LOC_LINE.sub("", text)
    text = _LOC_ATTR.sub("", text)
    for pattern, prefix in ((_VALUE, "%v"), (_SYMBOL, "@f")):
        names: Dict[str, str] = {}
        text = pattern.sub(lambda m, names=names, prefix=prefix: names.setdefault(m.group(0), f"{prefix}{len(names)}"), text)
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def compile_listener(stats: Dict[str, Any]) -> Callable[..., None]:
    """A listener for Triton's compiler (``knobs.compilation.listener``)
    that counts into ``stats`` the kernels compiled, those found in the
    cache, and the seconds both took."""

    def listen(**kw: Any) -> None:
        times = kw.get("times")
        us = 0
        if times is not None:
            us = int(getattr(times, "ir_initialization", 0) or 0) + int(getattr(times, "store_results", 0) or 0)
            us += sum(int(d or 0) for _, d in (getattr(times, "lowering_stages", None) or []))
        stats["seconds"] += us / 1e6
        stats["cache_hits" if kw.get("cache_hit") else "compiled"] += 1

    return listen


def listen_compiles(stats: Dict[str, Any]) -> None:
    """Count Triton's compiles into ``stats`` from here on (a runner, before
    it imports a candidate); nothing without Triton."""
    try:
        from triton import knobs
    except Exception:  # noqa: BLE001 - no Triton, or one without knobs
        return
    compilation = getattr(knobs, "compilation", None)
    if compilation is not None and hasattr(compilation, "listener"):
        compilation.listener = compile_listener(stats)


def precompile(launches: List[Any], threads: int) -> int:
    """Compile recorded launches (LaunchRecorder) on ``threads`` threads,
    into each kernel's own cache, as its launch would (Triton's async
    compile mode): the next real launch finds its kernel compiled. Returns
    how many were compiled. Under the interpreter nothing compiles; a launch
    that cannot be prepared is left for its real launch to compile (and
    fail, if it must)."""
    if not launches or os.environ.get("TRITON_INTERPRET", "") == "1":
        return 0
    from concurrent.futures import ThreadPoolExecutor

    from triton import knobs
    from triton.runtime import driver
    from triton.runtime._async_compile import AsyncCompileMode
    from triton.runtime.jit import JITFunction, compute_cache_key

    device = driver.active.get_current_device()
    n = 0
    seen = set()
    with ThreadPoolExecutor(max(1, threads)) as pool:
        with AsyncCompileMode(pool, ignore_errors=True):
            for fn, args, kwargs, _grid in launches:
                if not isinstance(fn, JITFunction):
                    continue
                try:
                    kw = dict(kwargs)
                    kw["debug"] = kw.get("debug", fn.debug) or knobs.runtime.debug
                    kw["instrumentation_mode"] = knobs.compilation.instrumentation_mode
                    kernel_cache, key_cache, _target, backend, binder = fn.device_caches[device]
                    bound, specialization, options = binder(*args, **kw)
                    key = compute_cache_key(key_cache, specialization, options)
                    if key in kernel_cache or (id(fn), key) in seen:
                        continue
                    seen.add((id(fn), key))
                    options, signature, constexprs, attrs = fn._pack_args(backend, kw, bound, specialization, options)
                    fn._do_compile(key, signature, device, constexprs, options, attrs, warmup=True)
                    n += 1
                except Exception:  # noqa: BLE001 - an unknown Triton version or launch: compiled at its launch
                    continue
    return n
