"""What a dotted name of a kernel denotes, looked up on the real modules.

The static check spells names through the kernel's imports (``F.linear`` is
``torch.nn.functional.linear``); this module finds what such a name is without
running any of the library's code (``inspect.getattr_static``, ``sys.modules``
and ``importlib.util.find_spec`` only), so that

- a module reached under another spelling gets its real name
  (``torch.nn.modules.linear.F`` is ``torch.nn.functional``, ``triton.testing.torch``
  is ``torch``, ``dataclasses.inspect`` is ``inspect``);
- a banned function is known whatever it is called (``torch.functional.einsum``
  is ``torch.einsum``);
- the check knows whether a name is a module, a class, a function or plain data,
  which decides where it may appear.

Only modules the kernel may import are looked up (they are imported here when
they are not yet loaded); anything that cannot be found is "unknown".
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import io
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from .banlist import ALLOWED_IMPORTS, LIBRARY_OPS, MODULE_SPELLINGS, NN_CONTAINERS, STRICT_OPS

MODULE = "module"
CLASS = "class"
CALLABLE = "callable"
DATA = "data"
UNKNOWN = "unknown"

_MISSING = object()

# Facts about the installed torch, the same for every check in this process (a
# cache, filled on first use; not a constant the guard compares).
_facts: Dict[Tuple[str, bool], Any] = {}


@dataclass
class Resolved:
    """A dotted name: its real name, what it is, and the modules it passes through."""

    canonical: str
    kind: str
    obj: Any = None
    # (canonical module name, attribute) for every step taken from a module.
    steps: List[Tuple[str, str]] = field(default_factory=list)
    modules: List[str] = field(default_factory=list)


def _module_name(mod: types.ModuleType) -> str:
    try:
        name = inspect.getattr_static(mod, "__name__")
    except AttributeError:
        return ""
    if not isinstance(name, str):
        return ""
    return MODULE_SPELLINGS.get(name, name)


class Resolver:
    """Looks dotted names up; caches per instance (one instance per check)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self._cache: Dict[str, Resolved] = {}
        self._banned: Optional[Dict[int, Tuple[Any, str]]] = None
        self._torch: Any = _MISSING

    # -- modules --

    def _root(self, name: str) -> Optional[types.ModuleType]:
        if name not in ALLOWED_IMPORTS or name == "__future__":
            return None
        mod = sys.modules.get(name)
        if mod is None:
            try:
                mod = importlib.import_module(name)
            except Exception:  # not installed here: the kernel cannot import it either
                return None
        return mod if isinstance(mod, types.ModuleType) else None

    def torch(self) -> Any:
        if self._torch is _MISSING:
            self._torch = self._root("torch")
        return self._torch

    def resolve(self, qual: str) -> Resolved:
        hit = self._cache.get(qual)
        if hit is None:
            hit = self._resolve(qual)
            self._cache[qual] = hit
        return hit

    def _resolve(self, qual: str) -> Resolved:
        parts = qual.split(".")
        mod = self._root(parts[0])
        if mod is None:
            return Resolved(qual, UNKNOWN)
        obj: Any = mod
        canon = _module_name(mod) or parts[0]
        res = Resolved(canon, MODULE, mod, [], [canon])
        for i, attr in enumerate(parts[1:], start=1):
            nxt: Any = _MISSING
            if isinstance(obj, types.ModuleType):
                modname = canon
                res.steps.append((modname, attr))
                try:
                    nxt = inspect.getattr_static(obj, attr)
                except AttributeError:
                    nxt = sys.modules.get(f"{_module_name(obj)}.{attr}", _MISSING)
                    if nxt is _MISSING and self._is_submodule(f"{_module_name(obj)}.{attr}"):
                        # A submodule not loaded yet: its name is known, its contents are not.
                        sub = f"{modname}.{attr}"
                        res.modules.append(sub)
                        rest = parts[i + 1:]
                        kind = MODULE if not rest else UNKNOWN
                        return Resolved(".".join([sub] + rest), kind, None, res.steps, res.modules)
            elif isinstance(obj, type):
                try:
                    nxt = inspect.getattr_static(obj, attr)
                except AttributeError:
                    nxt = _MISSING
            if nxt is _MISSING:
                res.canonical = ".".join([canon] + parts[i:])
                res.kind, res.obj = UNKNOWN, None
                return res
            obj = nxt
            if isinstance(obj, types.ModuleType):
                canon = _module_name(obj) or f"{canon}.{attr}"
                res.modules.append(canon)
            else:
                canon = f"{canon}.{attr}"
        res.canonical, res.obj, res.kind = canon, obj, classify(obj)
        return res

    @staticmethod
    def _is_submodule(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except Exception:
            return False

    # -- facts about torch --

    def banned_identity(self, obj: Any) -> Optional[str]:
        """The banned name of a library function, whatever it was reached as."""
        if obj is None:
            return None
        if self._banned is None:
            key = ("banned", self.strict)
            if key not in _facts:
                _facts[key] = self._build_banned()
            self._banned = _facts[key]
        hit = self._banned.get(id(obj))
        return hit[1] if hit is not None and hit[0] is obj else None

    def _build_banned(self) -> Dict[int, Tuple[Any, str]]:
        out: Dict[int, Tuple[Any, str]] = {}
        torch = self.torch()
        if torch is None:
            return out
        names = set(LIBRARY_OPS) | (set(STRICT_OPS) if self.strict else set())
        spaces = [("torch", torch), ("torch.Tensor", getattr(torch, "Tensor", None))]
        for sub in ("nn.functional", "linalg", "special", "fft"):
            mod = sys.modules.get(f"torch.{sub}")
            if mod is not None:
                spaces.append((f"torch.{sub}", mod))
        for prefix, space in spaces:
            if space is None:
                continue
            for n in names:
                for name in (n, n + "_"):
                    try:
                        o = inspect.getattr_static(space, name)
                    except AttributeError:
                        continue
                    if callable(o) and not isinstance(o, type):
                        out.setdefault(id(o), (o, f"{prefix}.{name}"))
        functional = sys.modules.get("torch.nn.functional")
        if functional is not None:
            for name, o in vars(functional).items():
                if name.startswith("_") or isinstance(o, (type, types.ModuleType)) or not callable(o):
                    continue
                if getattr(o, "__module__", "") in ("torch.nn.functional", "torch._C._nn", None):
                    out.setdefault(id(o), (o, f"torch.nn.functional.{name}"))
        return out

    def is_nn_layer_class(self, obj: Any) -> bool:
        """A torch.nn class that computes when called (nn.Linear, nn.Sequential; not nn.Module)."""
        torch = self.torch()
        if torch is None or not isinstance(obj, type):
            return False
        try:
            is_module = issubclass(obj, torch.nn.Module)
        except TypeError:
            return False
        if not is_module:
            return False
        return obj.__module__.startswith("torch.") and obj.__name__ not in NN_CONTAINERS

    def is_nn_container_class(self, obj: Any) -> bool:
        torch = self.torch()
        return torch is not None and obj in (torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.Sequential)

    def tensor_methods(self) -> Set[str]:
        key = ("tensor_methods", False)
        if key not in _facts:
            _facts[key] = self._tensor_methods()
        return _facts[key]

    def _tensor_methods(self) -> Set[str]:
        torch = self.torch()
        if torch is None:
            return set()
        return {n for n in dir(torch.Tensor) if callable(inspect.getattr_static(torch.Tensor, n, None))}

    def module_methods(self) -> Set[str]:
        key = ("module_methods", False)
        if key not in _facts:
            _facts[key] = self._module_methods()
        return _facts[key]

    def _module_methods(self) -> Set[str]:
        torch = self.torch()
        if torch is None:
            return set()
        return {n for n in dir(torch.nn.Module) if callable(inspect.getattr_static(torch.nn.Module, n, None))}

    def internal_names(self) -> Set[str]:
        key = ("internal_names", False)
        if key not in _facts:
            _facts[key] = self._internal_names()
        return _facts[key]

    def _internal_names(self) -> Set[str]:
        """Attribute names torch's own objects use (a kernel may not claim them as its own)."""
        torch = self.torch()
        if torch is None:
            return set()
        return set(dir(torch.nn.Module)) | set(dir(torch.Tensor)) | set(dir(torch.autograd.Function))


def classify(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return MODULE
    if isinstance(obj, type):
        return CLASS
    if _is_data(obj):
        return DATA
    if callable(obj) or isinstance(obj, (staticmethod, classmethod)):
        return CALLABLE
    return UNKNOWN


def _is_data(obj: Any, depth: int = 0) -> bool:
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return True
    if isinstance(obj, tuple) and depth < 3:
        return all(_is_data(o, depth + 1) for o in obj)
    if isinstance(obj, io.IOBase):
        return True  # sys.stdout and friends
    mod = type(obj).__module__ or ""
    name = type(obj).__name__
    if mod == "torch" and name in ("dtype", "device", "layout", "memory_format", "finfo", "iinfo", "Size"):
        return True
    if mod.startswith("triton.language") and name in ("dtype", "pointer_type", "constexpr", "block_type"):
        return True
    return False
