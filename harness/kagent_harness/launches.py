"""Counting Triton kernel launches during one candidate call.

Two independent counters, installed only around the counted call:

- the launch hook (``triton.knobs.runtime.launch_enter_hook``, a HookChain in
  Triton 3.4+, a plain attribute in earlier knobs, or
  ``CompiledKernel.launch_enter_hook`` in older Triton), which sees every real
  launch of a compiled kernel;
- a wrapper of ``JITFunction.run`` and of the interpreter's
  ``InterpretedFunction.run`` (TRITON_INTERPRET=1), counting non-warm-up runs,
  which works whatever the hook API of the installed version.

The count reported is the larger of the two.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType, TracebackType
from typing import Any, Callable, List, Optional, Tuple, Type


def triton_module() -> Optional[ModuleType]:
    """The triton package if importable (imported once by the worker)."""
    mod = sys.modules.get("triton")
    if mod is not None:
        return mod
    try:
        return importlib.import_module("triton")
    except Exception:  # noqa: BLE001 - any import failure means "no triton"
        return None


def import_triton_parts() -> None:
    """Import the triton submodules the harness watches, so that lazy imports
    later never look like tampering."""
    for name in (
        "triton.knobs",
        "triton.testing",
        "triton.runtime.jit",
        "triton.runtime.interpreter",
        "triton.compiler.compiler",
    ):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - absent in some versions
            pass


def warm_driver() -> str:
    """What Triton sets up once per process before its first launch on an
    NVIDIA GPU, done without a device: the compiler's set-up (warm_compiler)
    and the driver's helper module, which Triton compiles from C with the
    host's compiler into TRITON_CACHE_DIR and loads (loading it starts no
    CUDA). For a process started ahead of its work, as a profile's is: its
    first launch then finds the module in its cache and pays only for its
    kernel's own compile and launcher. Returns "" or why it did not warm."""
    why = warm_compiler()
    if why:
        return why
    try:
        import torch

        if getattr(torch.version, "hip", None):
            return "not an NVIDIA build of torch"
        from triton.backends.nvidia.driver import CudaUtils

        CudaUtils()
        return ""
    except Exception as exc:  # noqa: BLE001 - no C compiler, no libcuda, another Triton
        return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def warm_compiler() -> str:
    """Compile one trivial kernel for an NVIDIA target, without a device and
    into a cache that is removed at once: what Triton does once per process
    before its first compile (imports, LLVM and MLIR set-up; about 0.3 s of a
    0.4 s first compile on a CPU core, against 0.05 s for the next) is then
    done in a fork server, and every worker and runner forked from it
    compiles its first kernel at the cost of later ones. Starts no thread and
    initialises no device. Returns "" or why it did not warm (nothing is
    wrong then: the first compile pays instead)."""
    import os
    import shutil
    import tempfile

    if triton_module() is None:
        return "no triton"
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        # The interpreter patches triton.language in place once it has run a
        # kernel; a compile after that fails, and nothing compiles anyway.
        return "interpreter mode"
    saved = os.environ.get("TRITON_CACHE_DIR")
    tmp = tempfile.mkdtemp(prefix="kagent-triton-warm-")
    os.environ["TRITON_CACHE_DIR"] = tmp
    try:
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import ASTSource

        def _warm(x_ptr):  # type: ignore[no-untyped-def]
            tl.store(x_ptr, tl.load(x_ptr) + 1)

        from triton.runtime.jit import JITFunction

        triton.compile(ASTSource(JITFunction(_warm), {"x_ptr": "*i32"}, {}), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 1})
        return ""
    except Exception as exc:  # noqa: BLE001 - a Triton without the NVIDIA backend, no ptxas, ...
        return f"{type(exc).__name__}: {exc}"[:300]
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved
        shutil.rmtree(tmp, ignore_errors=True)


class LaunchCounter:
    """Context manager counting Triton launches inside its block."""

    def __init__(self) -> None:
        self.hook_count = 0
        self.run_count = 0
        self._undo: List[Callable[[], None]] = []

    @property
    def count(self) -> int:
        return max(self.hook_count, self.run_count)

    def _hook(self, *args: Any, **kwargs: Any) -> None:
        self.hook_count += 1

    def __enter__(self) -> "LaunchCounter":
        if triton_module() is None:
            return self
        self._install_hook()
        self._wrap_run("triton.runtime.jit", "JITFunction")
        self._wrap_run("triton.runtime.interpreter", "InterpretedFunction")
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        while self._undo:
            undo = self._undo.pop()
            try:
                undo()
            except Exception:  # noqa: BLE001 - restoring must not mask the call's outcome
                pass

    def _install_hook(self) -> None:
        knobs = sys.modules.get("triton.knobs")
        runtime = getattr(knobs, "runtime", None) if knobs is not None else None
        if runtime is not None and hasattr(runtime, "launch_enter_hook"):
            chain = runtime.launch_enter_hook
            if hasattr(chain, "add") and hasattr(chain, "remove"):
                chain.add(self._hook)
                self._undo.append(lambda: chain.remove(self._hook))
                return
            self._chain_attr(runtime, "launch_enter_hook")
            return
        compiler = sys.modules.get("triton.compiler.compiler")
        kernel_cls = getattr(compiler, "CompiledKernel", None) if compiler is not None else None
        if kernel_cls is not None and hasattr(kernel_cls, "launch_enter_hook"):
            self._chain_attr(kernel_cls, "launch_enter_hook")

    def _chain_attr(self, owner: Any, name: str) -> None:
        previous = getattr(owner, name)
        counter = self

        def hook(*args: Any, **kwargs: Any) -> Any:
            counter.hook_count += 1
            if previous is not None:
                return previous(*args, **kwargs)
            return None

        setattr(owner, name, hook)
        self._undo.append(lambda: setattr(owner, name, previous))

    def _wrap_run(self, module: str, cls_name: str) -> None:
        mod = sys.modules.get(module)
        cls = getattr(mod, cls_name, None) if mod is not None else None
        if cls is None or "run" not in vars(cls):
            return
        original = vars(cls)["run"]
        counter = self

        def run(this: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("warmup", False):
                counter.run_count += 1
            return original(this, *args, **kwargs)

        setattr(cls, "run", run)
        self._undo.append(lambda: setattr(cls, "run", original))


def launch_support() -> Tuple[bool, str]:
    """(can count launches, reason if not)."""
    if triton_module() is None:
        return False, "triton is not importable here"
    return True, ""
