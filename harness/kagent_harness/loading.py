"""Loading a KernelBench-style problem: fresh import, seeded input draws on the
device, the reference Model and its outputs (kept alive for the problem's life),
keyed checksums of both (to notice later changes), and the reference's FLOPs.
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
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch

from . import device as devmod
from . import memplan
from .checksum import checksum, prepare
from .device import Device
from .failures import CUDA_ERROR, OOM, RequestError, classify, describe
from .flops import count_flops, dtype_policy
from .numerics import bits_equal

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
    inputs_sum: Tuple[Any, ...] = ()  # keyed checksums (checksum.py) taken at load
    ref_sum: Tuple[Any, ...] = ()


@dataclass
class ShapeSet:
    """Inputs and references under one set of module-level size constants."""

    label: str  # "default" or the override, e.g. "{batch_size: 4}"
    override: Dict[str, Any]
    init_inputs: List[Any]
    model: torch.nn.Module
    draws: List[Draw] = field(default_factory=list)
    # The reference modified its (copied) inputs on some draw: baselines must
    # then be timed on copies, never on the stored draws.
    ref_mutates_inputs: bool = False


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
    flops: Optional[int] = None  # one forward of the reference (flops.py); None: not counted
    flops_note: str = ""
    plan: Any = None  # memplan.Plan of the stored draws (None: one draw, not planned)
    sets: int = memplan.MAX_SETS  # input buffer sets per runner (memplan.buffer_sets)
    kept: int = memplan.MAX_KEPT  # runners kept between operations (memplan.kept_runners)
    spare: Any = None  # the next candidate's runner, started ahead (spare.Spare; set by the worker)

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
            "flops": self.flops,
            "flops_note": self.flops_note,
            "model_params": sum(p.numel() for p in self.model.parameters()),
            "draws": len(self.main.draws),
            "shapes": [s.label for s in self.extra],
            "dtype": self.dtype_name or "native",
            "tf32": self.tf32,
            "device": str(self.device.torch_device),
            "memory": self._memory(),
        }

    def _memory(self) -> Optional[Dict[str, Any]]:
        if self.plan is None:
            return None
        out = self.plan.as_dict()
        out.update({"buffer_sets": self.sets, "max_buffer_sets": memplan.MAX_SETS, "kept_runners": self.kept})
        return out


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
    reference: bool = True,
    plan: Optional[Callable[[Draw, torch.nn.Module], int]] = None,
) -> ShapeSet:
    """The shape set under ``override``, one draw per seed; with ``reference``
    False the draws get no reference output (ref None). ``plan``, given the
    first draw and the model, says how many draws to store: the first seeds
    and the last (secret) one are kept."""
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
        seeds = list(seeds)
        index = -1
        while index + 1 < len(seeds):
            index += 1
            seed = seeds[index]
            if index == 1 and plan is not None and shape_set.draws:
                keep = plan(shape_set.draws[0], model)
                if keep < len(seeds):
                    seeds = seeds[: max(1, keep - 1)] + seeds[-1:]
            seed_all(seed)
            try:
                with device.default_device():
                    raw = module.get_inputs()
            except BaseException as exc:  # noqa: BLE001
                raise _problem_error(path, "get_inputs raised", exc) from None
            if not isinstance(raw, (list, tuple)):
                raise _problem_error(path, f"get_inputs returned {type(raw).__name__}, expected a list")
            inputs = list(_to_device(list(raw), device, dtype))
            del raw
            if not reference:
                shape_set.draws.append(Draw(index=index, inputs=inputs, ref=None))
                continue
            try:
                copies = devmod.clone_all(inputs)
                with torch.no_grad():
                    ref = model(*copies)
                device.synchronize()
            except BaseException as exc:  # noqa: BLE001
                raise _problem_error(path, "Model.forward raised", exc) from None
            if not bits_equal(copies, inputs):
                shape_set.ref_mutates_inputs = True
            del copies
            ref = devmod.map_tensors(ref, lambda t: t.detach())
            shape_set.draws.append(Draw(index=index, inputs=inputs, ref=ref))
    return shape_set


def _count_flops(
    path: str, main: ShapeSet, device: Device, dtype_name: str, tf32: str, counter: Optional[ModuleType]
) -> Tuple[Optional[int], str]:
    """FLOPs of one reference forward on the first draw of the main shape set.
    The model's buffers (running statistics...) are restored afterwards, and
    the stored inputs are used as they are unless the reference mutates them."""
    draw = main.draws[0]
    policy = dtype_policy(draw.inputs, dtype_name, tf32)
    saved = {name: b.detach().clone() for name, b in main.model.named_buffers()}
    try:
        inputs = devmod.clone_all(draw.inputs) if main.ref_mutates_inputs else draw.inputs
        counted = count_flops(main.model, inputs, device, policy, counter)
    except BaseException as exc:  # noqa: BLE001 - only CUDA errors come this way
        raise _problem_error(path, "Model.forward raised (counting FLOPs)", exc) from None
    finally:
        with torch.no_grad():
            for name, b in main.model.named_buffers():
                if name in saved and b.shape == saved[name].shape:
                    b.copy_(saved[name])
    return counted.flops, counted.note


@dataclass
class _Request:
    path: str
    dtype_name: str
    dtype: Optional[torch.dtype]
    seeds: List[int]
    tf32: str
    shapes: List[Dict[str, Any]]
    test_path: str
    size: Dict[str, Any]


def _parse_request(req: Dict[str, Any]) -> _Request:
    path = str(req.get("problem_path") or "")
    if not path or not os.path.isfile(path):
        raise RequestError("bad_request", f"problem_path {path!r} is not a file")
    dtype_name = str(req.get("dtype") or "")
    if dtype_name not in DTYPES:
        raise RequestError("bad_request", f"dtype {dtype_name!r} is not one of fp32, fp16, bf16")
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
    size = req.get("size") or {}
    if not isinstance(size, dict):
        raise RequestError("bad_request", "size must be an object")
    return _Request(path, dtype_name, DTYPES[dtype_name], seeds, tf32, [dict(s) for s in shapes], test_path, dict(size))


def _new_problem(
    req: Dict[str, Any], r: _Request, problem_id: str, module: ModuleType, device: Device, main: ShapeSet, extra: List[ShapeSet]
) -> Problem:
    atol = req.get("atol")
    rtol = req.get("rtol")
    return Problem(
        id=problem_id,
        path=r.path,
        module=module,
        device=device,
        dtype=r.dtype,
        dtype_name=r.dtype_name,
        seeds=r.seeds,
        init_seed=r.seeds[0],
        atol=float(atol) if atol is not None else None,
        rtol=float(rtol) if rtol is not None else None,
        tf32=r.tf32,
        allow_inplace=bool(req.get("allow_inplace", False)),
        atomics=bool(req.get("atomics", False)),
        test_path=r.test_path,
        main=main,
        extra=extra,
    )


def load_problem(
    req: Dict[str, Any], device: Device, problem_id: str, flop_counter: Optional[ModuleType] = None
) -> Problem:
    """Load a problem (see PROTOCOL.md, load_problem). ``flop_counter`` stands
    in for torch.utils.flop_counter (tests)."""
    r = _parse_request(req)
    module = _import_and_prepare(r, device)
    init_seed = r.seeds[0]
    # The timed shape: the problem's own sizes, or the request's size override.
    plans: List[memplan.Plan] = []
    cap = memplan.capacity(int(device.info().get("total_memory") or 0))

    def plan(first: Draw, model: torch.nn.Module) -> int:
        x, y = devmod.nbytes(first.inputs), devmod.nbytes(first.ref)
        params = sum(t.numel() * t.element_size() for t in itertools.chain(model.parameters(), model.buffers()))
        flush = 2 * device.l2_bytes() if device.is_gpu else 0
        sets = memplan.buffer_sets(x, cap)
        p = memplan.plan_draws(len(r.seeds), x, y, params, flush, device.free_memory(), x + y, sets)
        if p.draws < len(r.seeds) and device.is_gpu:
            # Memory a replaced worker or a closed runner held may still be on
            # its way back to the device.
            full = memplan.need_for(len(r.seeds), x, y, params, flush, sets)
            memplan.wait_for_memory(device.free_memory, int(full / memplan.PLAN_FRACTION) - (x + y))
            p = memplan.plan_draws(len(r.seeds), x, y, params, flush, device.free_memory(), x + y, sets)
        plans.append(p)
        if p.draws == 0:
            raise RequestError(OOM, f"{os.path.basename(r.path)}: {p.note}")
        return p.draws

    main = _build_shape_set(module, r.path, device, r.dtype, init_seed, r.seeds, r.size, plan=plan)
    flops, flops_note = _count_flops(r.path, main, device, r.dtype_name, r.tf32, flop_counter)
    extra = [
        _build_shape_set(module, r.path, device, r.dtype, init_seed, r.seeds[-1:], override) for override in r.shapes
    ]
    for shape_set in [main] + extra:
        for draw in shape_set.draws:
            draw.inputs_sum = checksum(draw.inputs)
            draw.ref_sum = checksum(draw.ref)
    # The last draw's seed is the secret one: torch.initial_seed() (and the
    # other RNGs' states) must not give it away to a candidate.
    seed_all(secret_seed())
    # The reference's copies and temporaries go back to the device, so that the
    # candidates' allocations get segments of their own sizes (no large cached
    # block split by a small long-lived tensor).
    device.empty_cache()
    problem = _new_problem(req, r, problem_id, module, device, main, extra)
    problem.flops, problem.flops_note = flops, flops_note
    problem.plan = plans[0] if plans else None
    x, y = devmod.nbytes(main.draws[0].inputs), devmod.nbytes(main.draws[0].ref)
    problem.sets = memplan.buffer_sets(x, cap)
    problem.kept = memplan.kept_runners(x, y, problem.sets, cap)
    return problem


def load_for_profile(req: Dict[str, Any], device: Device, problem_id: str) -> Tuple[Problem, ShapeSet]:
    """What a profile of one call needs, and nothing more: the shape set it
    profiles (the request's first shape override, else the default shapes),
    built exactly as load_problem builds it (same seeds, same model weights,
    same first draw), with that one draw and no reference output, FLOP count
    or checksums. A profiler's process then holds one copy of the inputs, not
    every draw and its reference."""
    r = _parse_request(req)
    module = _import_and_prepare(r, device)
    override = r.shapes[0] if r.shapes else r.size
    # The first draw of the timed shape; the (secret-seeded) draw of a
    # held-out shape set, which has only that one.
    seeds = r.seeds[-1:] if r.shapes else r.seeds[:1]
    shape_set = _build_shape_set(module, r.path, device, r.dtype, r.seeds[0], seeds, override, reference=False)
    seed_all(secret_seed())
    device.empty_cache()
    extra = [shape_set] if r.shapes else []
    return _new_problem(req, r, problem_id, module, device, shape_set, extra), shape_set


def _import_and_prepare(r: _Request, device: Device) -> ModuleType:
    apply_tf32(r.tf32)
    try:
        module = import_file(r.path, "kagent_problem")
    except BaseException as exc:  # noqa: BLE001 - user code, SystemExit included
        raise _problem_error(r.path, "import failed", exc) from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            what = "class Model" if name == "Model" else f"function {name}()"
            raise _problem_error(r.path, f"no {what} (KernelBench form needs Model, get_inputs, get_init_inputs)")
    prepare(device.torch_device)
    return module


def secret_seed() -> int:
    """A seed nobody can know or guess (not derived from the request)."""
    return int.from_bytes(os.urandom(7), "little")


def fresh_inputs(problem: Problem) -> List[Any]:
    """A new draw of the main shape set's inputs, built as load_problem builds
    its draws but from a secret seed: inputs no call has seen, whose reference
    output does not exist anywhere yet. The RNGs are reseeded at random
    afterwards, so the seed cannot be read back."""
    seed_all(secret_seed())
    try:
        with _overridden(problem.module, problem.main.override, problem.path), problem.device.default_device():
            raw = problem.module.get_inputs()
    except BaseException as exc:  # noqa: BLE001 - user code
        raise _problem_error(problem.path, "get_inputs raised", exc) from None
    finally:
        seed_all(secret_seed())
    return list(_to_device(list(raw), problem.device, problem.dtype))


def references_intact(problem: Problem) -> Optional[str]:
    """None if no stored input or reference changed since loading (keyed
    checksums of the exact bits)."""
    for shape_set in [problem.main] + problem.extra:
        for draw in shape_set.draws:
            if checksum(draw.inputs) != draw.inputs_sum or checksum(draw.ref) != draw.ref_sum:
                return f"stored inputs or reference outputs of draw {draw.index + 1} ({shape_set.label}) were modified"
    return None


def inputs_intact(draws: List[Draw], label: str = "default") -> Optional[str]:
    """None if the stored inputs of these draws are unchanged since loading."""
    for draw in draws:
        if checksum(draw.inputs) != draw.inputs_sum:
            return f"the stored inputs of draw {draw.index + 1} ({label}) were modified"
    return None
