"""Loading a KernelBench-style problem: fresh import, seeded input draws on the
device, the reference Model and its outputs (kept alive for the problem's life).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import linecache
import os
import random
import sys
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch

from . import device as devmod
from .device import Device
from .failures import CUDA_ERROR, OOM, RequestError, classify, describe

DTYPES: Dict[str, Optional[torch.dtype]] = {
    "": None,
    "fp32": torch.float32,
    "float32": torch.float32,
    "fp16": torch.float16,
    "float16": torch.float16,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
}

_module_counter = itertools.count(1)


def unique_module_name(prefix: str, path: str) -> str:
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])
    return f"{prefix}_{next(_module_counter)}_{stem}"


def import_file(path: str, prefix: str) -> ModuleType:
    """Import a Python file as a new module under a unique name.

    The module stays in sys.modules (Triton looks functions up by module), and
    any exception (SystemExit included) propagates to the caller.
    """
    name = unique_module_name(prefix, path)
    linecache.checkcache(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def seed_all(seed: int) -> None:
    """Seed every RNG a problem's get_inputs may use."""
    random.seed(seed)
    torch.manual_seed(seed)  # all devices
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(seed % (1 << 32))
        except Exception:  # noqa: BLE001 - numpy is optional and best effort
            pass


def apply_tf32(policy: str) -> None:
    """Apply the TF32 policy to torch's matmul and cuDNN (identically for the
    reference, the baselines and the candidate)."""
    allow = policy == "allow"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.backends.cuda.matmul.allow_tf32 = allow
        except (AttributeError, RuntimeError):
            pass
        try:
            torch.backends.cudnn.allow_tf32 = allow
        except (AttributeError, RuntimeError):
            pass


@dataclass
class Draw:
    """One set of inputs and the reference outputs computed from them."""

    index: int
    inputs: List[Any]
    ref: Any
    fingerprint: Tuple[float, ...] = ()


@dataclass
class ShapeSet:
    """Inputs and references under one set of module-level size constants."""

    label: str  # "default" or the override, e.g. "{batch_size: 4}"
    override: Dict[str, Any]
    init_inputs: List[Any]
    model: torch.nn.Module
    draws: List[Draw] = field(default_factory=list)


@dataclass
class Problem:
    id: str
    path: str
    module: ModuleType
    device: Device
    dtype: Optional[torch.dtype]
    dtype_name: str
    seeds: List[int]
    init_seed: int
    atol: Optional[float]
    rtol: Optional[float]
    tf32: str
    allow_inplace: bool
    atomics: bool
    test_path: str
    main: ShapeSet
    extra: List[ShapeSet]
    compiled: Any = None  # torch.compile(model), built on first use

    @property
    def draws(self) -> List[Draw]:
        return self.main.draws

    @property
    def model(self) -> torch.nn.Module:
        return self.main.model

    @property
    def init_inputs(self) -> List[Any]:
        return self.main.init_inputs

    def summary(self) -> Dict[str, Any]:
        first = self.main.draws[0]
        return {
            "problem_id": self.id,
            "inputs": devmod.describe_tensors(first.inputs),
            "outputs": devmod.describe_tensors(first.ref),
            "bytes_in": devmod.nbytes(first.inputs),
            "bytes_out": devmod.nbytes(first.ref),
            "flops": None,
            "model_params": sum(p.numel() for p in self.model.parameters()),
            "draws": len(self.main.draws),
            "shapes": [s.label for s in self.extra],
            "dtype": self.dtype_name or "native",
            "tf32": self.tf32,
            "device": str(self.device.torch_device),
        }


def _problem_error(path: str, what: str, exc: Optional[BaseException] = None) -> RequestError:
    base = os.path.basename(path)
    if exc is None:
        return RequestError("problem", f"{base}: {what}")
    kind, fatal = classify(exc)
    sep = " " if what.endswith("raised") else ": "
    message = f"{base}: {what}{sep}{describe(exc)}"
    if kind in (OOM, CUDA_ERROR):
        return RequestError(kind, message, fatal=fatal)
    return RequestError("problem", message)


def _to_device(obj: Any, device: Device, dtype: Optional[torch.dtype]) -> Any:
    def move(t: torch.Tensor) -> torch.Tensor:
        t = t.detach()
        if dtype is not None and t.is_floating_point():
            t = t.to(device=device.torch_device, dtype=dtype)
        else:
            t = t.to(device=device.torch_device)
        return t.contiguous() if not t.is_contiguous() else t

    return devmod.map_tensors(obj, move)


def fingerprint(obj: Any, chunk: int = 1 << 24) -> Tuple[float, ...]:
    """A cheap content fingerprint (float64 sums of values and squares of every
    tensor, computed in chunks) used to notice that stored references or inputs
    were modified."""
    values: List[float] = []
    with torch.no_grad():
        for t in devmod.tensors_in(obj):
            d = t.detach()
            if d.is_complex():
                d = torch.view_as_real(d)
            flat = d.reshape(-1)
            s1 = 0.0
            s2 = 0.0
            for start in range(0, flat.numel(), chunk):
                c = flat[start : start + chunk].to(torch.float64)
                c = torch.nan_to_num(c, nan=7.0, posinf=11.0, neginf=-13.0)
                s1 += float(c.sum())
                s2 += float((c * c).sum())
            values.extend((s1, s2))
    return tuple(values)


@contextlib.contextmanager
def _overridden(module: ModuleType, override: Dict[str, Any], path: str) -> Iterator[None]:
    saved: Dict[str, Any] = {}
    for key in override:
        if not hasattr(module, key):
            raise _problem_error(path, f"shape override {key!r} is not a module-level name of the problem")
        saved[key] = getattr(module, key)
    try:
        for key, value in override.items():
            setattr(module, key, value)
        yield
    finally:
        for key, value in saved.items():
            setattr(module, key, value)


def _label(override: Dict[str, Any]) -> str:
    if not override:
        return "default"
    return "{" + ", ".join(f"{k}: {v}" for k, v in override.items()) + "}"


def _build_shape_set(
    module: ModuleType,
    path: str,
    device: Device,
    dtype: Optional[torch.dtype],
    init_seed: int,
    seeds: List[int],
    override: Dict[str, Any],
) -> ShapeSet:
    with _overridden(module, override, path):
        seed_all(init_seed)
        try:
            with device.default_device():
                init_inputs = list(module.get_init_inputs())
        except BaseException as exc:  # noqa: BLE001 - user code
            raise _problem_error(path, "get_init_inputs raised", exc) from None
        seed_all(init_seed)
        try:
            with device.default_device():
                model = module.Model(*init_inputs)
            model = model.to(device.torch_device)
            if dtype is not None:
                model = model.to(dtype)
        except BaseException as exc:  # noqa: BLE001
            raise _problem_error(path, "Model(*get_init_inputs()) raised", exc) from None
        shape_set = ShapeSet(label=_label(override), override=dict(override), init_inputs=init_inputs, model=model)
        for index, seed in enumerate(seeds):
            seed_all(seed)
            try:
                with device.default_device():
                    raw = module.get_inputs()
            except BaseException as exc:  # noqa: BLE001
                raise _problem_error(path, "get_inputs raised", exc) from None
            if not isinstance(raw, (list, tuple)):
                raise _problem_error(path, f"get_inputs returned {type(raw).__name__}, expected a list")
            inputs = list(_to_device(list(raw), device, dtype))
            try:
                with torch.no_grad():
                    ref = model(*devmod.clone_all(inputs))
                device.synchronize()
            except BaseException as exc:  # noqa: BLE001
                raise _problem_error(path, "Model.forward raised", exc) from None
            ref = devmod.map_tensors(ref, lambda t: t.detach())
            shape_set.draws.append(Draw(index=index, inputs=inputs, ref=ref, fingerprint=()))
    return shape_set


def load_problem(req: Dict[str, Any], device: Device, problem_id: str) -> Problem:
    path = str(req.get("problem_path") or "")
    if not path or not os.path.isfile(path):
        raise RequestError("bad_request", f"problem_path {path!r} is not a file")
    dtype_name = str(req.get("dtype") or "")
    if dtype_name not in DTYPES:
        raise RequestError("bad_request", f"dtype {dtype_name!r} is not one of fp32, fp16, bf16")
    dtype = DTYPES[dtype_name]
    seeds = [int(s) for s in (req.get("seeds") or [])]
    if len(seeds) < 3:
        raise RequestError("bad_request", f"need at least 3 seeds (public ones and a secret one), got {len(seeds)}")
    tf32 = str(req.get("tf32") or "forbid")
    if tf32 not in ("allow", "forbid"):
        raise RequestError("bad_request", f"tf32 {tf32!r} is not allow or forbid")
    shapes = req.get("shapes") or []
    if not isinstance(shapes, list) or not all(isinstance(s, dict) for s in shapes):
        raise RequestError("bad_request", "shapes must be a list of objects")
    test_path = str(req.get("test_path") or "")
    if test_path and not os.path.isfile(test_path):
        raise RequestError("bad_request", f"test_path {test_path!r} is not a file")

    apply_tf32(tf32)
    try:
        module = import_file(path, "kagent_problem")
    except BaseException as exc:  # noqa: BLE001 - user code, SystemExit included
        raise _problem_error(path, "import failed", exc) from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            what = "class Model" if name == "Model" else f"function {name}()"
            raise _problem_error(path, f"no {what} (KernelBench form needs Model, get_inputs, get_init_inputs)")

    init_seed = seeds[0]
    main = _build_shape_set(module, path, device, dtype, init_seed, seeds, {})
    extra = [
        _build_shape_set(module, path, device, dtype, init_seed, seeds[:1], dict(override))
        for override in shapes
    ]
    for shape_set in [main] + extra:
        for draw in shape_set.draws:
            draw.fingerprint = fingerprint(draw.inputs) + fingerprint(draw.ref)
    atol = req.get("atol")
    rtol = req.get("rtol")
    return Problem(
        id=problem_id,
        path=path,
        module=module,
        device=device,
        dtype=dtype,
        dtype_name=dtype_name,
        seeds=seeds,
        init_seed=init_seed,
        atol=float(atol) if atol is not None else None,
        rtol=float(rtol) if rtol is not None else None,
        tf32=tf32,
        allow_inplace=bool(req.get("allow_inplace", False)),
        atomics=bool(req.get("atomics", False)),
        test_path=test_path,
        main=main,
        extra=extra,
    )


def references_intact(problem: Problem) -> Optional[str]:
    """None if no stored input or reference changed since loading."""
    for shape_set in [problem.main] + problem.extra:
        for draw in shape_set.draws:
            if fingerprint(draw.inputs) + fingerprint(draw.ref) != draw.fingerprint:
                return f"stored inputs or reference outputs of draw {draw.index + 1} ({shape_set.label}) were modified"
    return None
