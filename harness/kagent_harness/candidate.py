"""Loading a candidate kernel file and building the callable that is verified,
timed and rechecked (one callable per shape set, built once and reused)."""

from __future__ import annotations

import hashlib
import os
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional

import torch

from .failures import ENTRY, IMPORT, CheckFailure, classify, describe
from .loading import Problem, ShapeSet, import_file, seed_all

ENTRY_MODEL = "ModelNew"
ENTRY_FUNCTION = "kernel_function"


def read_source(path: str) -> str:
    try:
        with open(path, "r", encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckFailure(IMPORT, f"cannot read {os.path.basename(path)}: {describe(exc)}") from None


def weights_mismatch(base: str, result: Any) -> str:
    """What a ModelNew's load_state_dict(Model's state_dict, strict=False)
    result says is missing or unexpected, as a failure reason ("" when
    nothing is)."""
    missing, unexpected = list(result.missing_keys), list(result.unexpected_keys)
    if not (missing or unexpected):
        return ""
    parts: List[str] = []
    if unexpected:
        parts.append(f"Model has {unexpected[:6]} which ModelNew lacks")
    if missing:
        parts.append(f"ModelNew has {missing[:6]} which Model lacks")
    return (f"{base}: ModelNew's parameters/buffers must carry the same names and shapes as Model's state_dict "
            f"(they are loaded from it): " + "; ".join(parts))


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


class Candidate:
    """An imported candidate bound to one problem."""

    def __init__(self, path: str, source: str, module: ModuleType, entry: str, problem: Problem) -> None:
        self.path = path
        self.source = source
        self.sha256 = source_hash(source)
        self.module = module
        self.entry = entry
        self.problem = problem
        self._callables: Dict[str, Callable[..., Any]] = {}
        # What verification found, for timing: the verified outputs' checksums
        # by draw index, and the precision check's bound for other calls.
        self.verified_sums: Optional[Dict[int, Any]] = None
        self.precision_bound: Any = None

    def callable_for(self, shape_set: ShapeSet) -> Callable[..., Any]:
        """The callable for a shape set: ``kernel_function(*inputs, *init_inputs)``
        or a ModelNew instance with Model's weights. Raises CheckFailure(entry)."""
        fn = self._callables.get(shape_set.label)
        if fn is None:
            fn = self._build(shape_set)
            self._callables[shape_set.label] = fn
        return fn

    def fingerprint(self, shape_set: ShapeSet) -> Dict[str, Any]:
        """The code fingerprint of one call on the shape set's first draw
        (ttir.py); a runner's candidate (remote.py) computes it there."""
        fn = self.callable_for(shape_set)
        inputs = list(shape_set.draws[0].inputs) if shape_set.draws else []
        remote = getattr(fn, "fingerprint", None)
        if remote is not None:
            return remote(inputs)
        from .ttir import fingerprint_call

        with torch.no_grad():
            return fingerprint_call(self.module, self.source, lambda: fn(*inputs))

    def _build(self, shape_set: ShapeSet) -> Callable[..., Any]:
        base = os.path.basename(self.path)
        if self.entry == ENTRY_FUNCTION:
            kf = getattr(self.module, ENTRY_FUNCTION)
            init = list(shape_set.init_inputs)

            def call(*inputs: Any) -> Any:
                return kf(*inputs, *init)

            return call
        cls = getattr(self.module, ENTRY_MODEL)
        dev = self.problem.device
        seed_all(self.problem.init_seed)
        try:
            with dev.default_device():
                model = cls(*shape_set.init_inputs)
        except BaseException as exc:  # noqa: BLE001 - candidate code
            kind, fatal = classify(exc)
            if kind != "exception":
                raise CheckFailure(kind, f"ModelNew(*init_inputs) raised {describe(exc)}", fatal) from None
            raise CheckFailure(ENTRY, f"{base}: ModelNew(*init_inputs) raised {describe(exc)}") from None
        if not isinstance(model, torch.nn.Module):
            raise CheckFailure(ENTRY, f"{base}: ModelNew must be a torch.nn.Module subclass, got {type(model).__name__}")
        reference = shape_set.model.state_dict()
        try:
            result = model.load_state_dict(reference, strict=False)
        except RuntimeError as exc:
            raise CheckFailure(
                ENTRY, f"{base}: ModelNew's parameters do not match Model's state_dict: {describe(exc)}"
            ) from None
        mismatch = weights_mismatch(base, result)
        if mismatch:
            raise CheckFailure(ENTRY, mismatch)
        try:
            model = model.to(dev.torch_device)
            if self.problem.dtype is not None:
                model = model.to(self.problem.dtype)
        except BaseException as exc:  # noqa: BLE001
            kind, fatal = classify(exc)
            raise CheckFailure(kind if kind != "exception" else ENTRY, f"moving ModelNew to the device: {describe(exc)}", fatal) from None
        return model


def find_entry(module: ModuleType, path: str, requested: str = "") -> str:
    base = os.path.basename(path)
    has_model = isinstance(getattr(module, ENTRY_MODEL, None), type)
    has_fn = callable(getattr(module, ENTRY_FUNCTION, None)) and not isinstance(getattr(module, ENTRY_FUNCTION), type)
    if requested:
        if requested == ENTRY_MODEL and has_model:
            return ENTRY_MODEL
        if requested == ENTRY_FUNCTION and has_fn:
            return ENTRY_FUNCTION
        raise CheckFailure(ENTRY, f"{base}: defines no {requested} (the kernel dir's entry point)")
    if has_model:
        return ENTRY_MODEL
    if has_fn:
        return ENTRY_FUNCTION
    raise CheckFailure(
        ENTRY,
        f"{base}: defines neither class ModelNew (built like Model) nor a top-level function kernel_function"
        "(*inputs, *init_inputs)",
    )


def import_candidate(path: str) -> ModuleType:
    """Import a candidate as a fresh module; every failure becomes a CheckFailure."""
    base = os.path.basename(path)
    try:
        return import_file(path, "kagent_cand")
    except SyntaxError as exc:
        raise CheckFailure(IMPORT, f"{base}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, anything
        kind, fatal = classify(exc)
        if kind != "exception":
            raise CheckFailure(kind, f"importing {base}: {describe(exc)}", fatal) from None
        raise CheckFailure(IMPORT, f"importing {base} raised {describe(exc)}") from None
