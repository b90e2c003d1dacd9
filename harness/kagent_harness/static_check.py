"""Static check of a candidate's source on the Python AST (never by regex).

What runs in the harness process is checked: module-level (import-time) code,
every class, ``kernel_function``, module-level ``__getattr__``/``__dir__`` and,
transitively, every function of the same file that checked code refers to
(including from ``@triton.jit`` bodies, which run as Python under the
interpreter and may call ``constexpr_function``s at compile time).

The rules close a class of escapes, not a list of spellings:

- **Nothing is reached by a computed name.** Free names must be allow-listed
  builtins (no ``getattr``, ``vars``, ``type``, ``eval``, ``__import__``,
  ``__builtins__`` ...); dunder attributes other than ``__name__`` (and
  ``__init__`` on ``super()`` or a class) are banned; ``getattr``-style builtins
  take literal names only; private attributes are allowed only where the kernel
  set them itself; format strings may not reach attributes.
- **Library objects are not first-class values.** A name that denotes a module
  may appear only as the base of an attribute chain (``torch.empty``); library
  functions and classes only where they are called, decorate, annotate or are
  tested against (``isinstance``). So no module, banned function or torch layer
  class can be passed, stored, returned, bound by ``for``/``with``/walrus or
  defaulted into a name the check cannot follow; only plain data (dtypes,
  numbers, strings) flows.
- **Every chain is looked up on the real modules** (``static_resolve``): its
  canonical name is checked (``torch.nn.modules.linear.F.linear`` is
  ``torch.nn.functional.linear``), banned functions are known by identity, and
  modules reached through another module's attributes are checked like imports.
- **Imports are an allow-list** (``banlist.ALLOWED_IMPORTS``), some modules only
  for a few attributes (``banlist.MODULE_ATTRIBUTES``); the reference problem and
  relative imports are banned.
- **torch.nn layers hold parameters, they never compute.** A torch layer (any
  ``torch.nn`` class but the containers) may be built only as an attribute
  (``self.fc = nn.Linear(...)``, also inside ``nn.ModuleList``/``Sequential``);
  an attribute holding one may only be read (``self.fc.weight``), indexed,
  iterated or measured with ``len``, never called, passed or bound to a name.
  Subclassing a torch layer is banned.
- **Banned ops whatever the spelling**: torch namespaces and tensor methods
  (``banlist.LIBRARY_OPS``/``LIBRARY_METHODS``, ``STRICT_OPS`` when Triton is
  required), ``@``, ``torch.ops``, private torch, ``torch.library`` ...
  ``@triton.jit`` bodies are Triton: the op bans do not apply there, but torch
  may not be used in them and the reach rules above do.

Usage as a program: ``python3 -m kagent_harness.static_check FILE [--no-triton]``
prints a JSON verdict.
"""

from __future__ import annotations

import ast
import json
import os
import string
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

from . import banlist as B
from .static_index import _call_name, _const_str, _Index, _is_dunder, _is_private, _positions, _show, _strip_inplace
from .static_resolve import CALLABLE, CLASS, DATA, MODULE, UNKNOWN, Resolver

ENTRY_FUNCTION = "kernel_function"
ENTRY_MODEL = "ModelNew"

# Where a library object may appear, by what it is.
_PLACES: Dict[str, Set[str]] = {
    MODULE: {"base"},
    CLASS: {"base", "callee", "decorator", "type", "annotation", "subscript"},
    CALLABLE: {"base", "callee", "decorator", "annotation"},
    UNKNOWN: {"base", "callee", "decorator", "type", "annotation", "subscript"},
}
_KIND_WORDS = {MODULE: "a module", CLASS: "a library class", CALLABLE: "a library function", UNKNOWN: "a library object"}


@dataclass(frozen=True)
class Violation:
    line: int
    message: str
    where: str

    def text(self) -> str:
        place = f" in {self.where}" if self.where else ""
        return f"line {self.line}{place}: {self.message}"


@dataclass
class Result:
    passed: bool
    violations: List[Violation]
    has_triton_jit: bool
    entries: List[str]

    @property
    def reason(self) -> str:
        if self.passed:
            return ""
        first = self.violations[0].text()
        more = len(self.violations) - 1
        return first + (f" (and {more} more)" if more > 0 else "")

    def as_dict(self) -> Dict[str, object]:
        return {
            "passed": self.passed,
            "reason": self.reason,
            "violations": [v.text() for v in self.violations],
            "has_triton_jit": self.has_triton_jit,
            "entries": self.entries,
        }


# --- Helpers ----------------------------------------------------------------------


class _Unit:
    """A piece of code that runs: module level, a function, or a class."""

    def __init__(self, name: str, nodes: List[ast.AST], where: str) -> None:
        self.name = name
        self.nodes = nodes
        self.where = where


class _Checker:
    def __init__(self, source: str, require_triton: bool, problem_names: Iterable[str]) -> None:
        self.require_triton = require_triton
        self.problem_names = set(B.PROBLEM_MODULES) | {n for n in problem_names if n}
        self.violations: List[Violation] = []
        self._seen: Set[Tuple[int, str]] = set()
        self.tree = ast.parse(source)
        self.index = _Index(self.tree)
        self.resolver = Resolver(strict=require_triton)
        self.pos = _positions(self.tree)
        self.jit_functions: Set[str] = set()
        self.has_jit = False
        self._find_jit()
        self.layer_attrs: Set[str] = set()  # attribute names that hold torch.nn layers
        self.layer_vars: Set[str] = set()  # names bound by iterating over them
        self.allowed_builds: Set[int] = set()  # layer constructions stored as attributes
        self._find_layers()

    # -- setup --

    def _find_jit(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self.index.is_triton_decorator(d, B.TRITON_JIT) for d in node.decorator_list):
                    self.has_jit = True
                if any(self.index.is_triton_decorator(d, B.TRITON_DECORATORS) for d in node.decorator_list):
                    self.jit_functions.add(node.name)
            elif isinstance(node, ast.Call) and self.index.is_triton_decorator(node.func, B.TRITON_JIT):
                # kernel = triton.jit(fn)
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in self.index.functions:
                        self.jit_functions.add(arg.id)
                        self.has_jit = True

    def resolved_objects(self, node: ast.AST) -> List[object]:
        return [r.obj for r in (self.resolver.resolve(q) for q in self.index.qualnames(node)) if r.obj is not None]

    def _layer_rhs(self, expr: ast.AST) -> Optional[Set[int]]:
        """The layer constructions in an attribute's value, or None if it holds no layer."""
        if isinstance(expr, ast.Call):
            objs = self.resolved_objects(expr.func)
            layer = any(self.resolver.is_nn_layer_class(o) for o in objs)
            container = any(self.resolver.is_nn_container_class(o) for o in objs)
            if not layer and not container:
                return None
            builds: Set[int] = {id(expr)} if layer else set()
            for a in list(expr.args) + [k.value for k in expr.keywords]:
                builds |= self._layer_rhs(a) or set()
            return builds
        parts: List[ast.AST] = []
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            parts = [e.value if isinstance(e, ast.Starred) else e for e in expr.elts]
        elif isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            parts = [expr.elt]
        elif isinstance(expr, ast.Dict):
            parts = list(expr.values)
        elif isinstance(expr, ast.DictComp):
            parts = [expr.value]
        found = [self._layer_rhs(p) for p in parts]
        if not any(f is not None for f in found):
            return None
        return set().union(*(f for f in found if f is not None))

    def _find_layers(self) -> None:
        for node in ast.walk(self.tree):
            pairs: List[Tuple[ast.AST, Optional[ast.AST]]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign):
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.Call) and _call_name(node) == "setattr" and len(node.args) == 3:
                name = _const_str(node.args[1])
                if name is not None:
                    pairs = [(ast.Attribute(value=node.args[0], attr=name, ctx=ast.Store()), node.args[2])]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                recv = node.func.value
                if node.func.attr in ("append", "extend", "insert") and isinstance(recv, ast.Attribute):
                    pairs = [(ast.Attribute(value=recv.value, attr=recv.attr, ctx=ast.Store()), a) for a in node.args]
            for target, value in pairs:
                if value is None or not isinstance(target, ast.Attribute):
                    continue
                builds = self._layer_rhs(value)
                if builds is not None:
                    self.layer_attrs.add(target.attr)
                    self.allowed_builds |= builds
        for _ in range(4):
            before = len(self.layer_vars)
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    self._taint(node.target, node.iter)
            if len(self.layer_vars) == before:
                break

    def _taint(self, target: ast.AST, it: ast.AST) -> None:
        name = _call_name(it)
        if name in ("enumerate", "zip") and isinstance(target, ast.Tuple):
            args = it.args  # type: ignore[attr-defined]
            pairs = [(target.elts[1], args[0])] if name == "enumerate" and args else list(zip(target.elts, args))
            for t, a in pairs:
                self._taint(t, a) if isinstance(t, ast.Tuple) else self._taint_name(t, a)
            return
        self._taint_name(target, it)

    def _taint_name(self, target: ast.AST, it: ast.AST) -> None:
        if self.is_layer(it):
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    self.layer_vars.add(sub.id)

    def is_layer(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in self.layer_attrs and not self.index.qualnames(node)
        if isinstance(node, ast.Name):
            return node.id in self.layer_vars
        if isinstance(node, ast.Subscript):
            return self.is_layer(node.value)
        if _call_name(node) == "getattr" and len(node.args) >= 2:  # type: ignore[attr-defined]
            return _const_str(node.args[1]) in self.layer_attrs  # type: ignore[attr-defined]
        return False

    # -- reporting --

    def add(self, node: ast.AST, message: str, unit: _Unit) -> None:
        line = getattr(node, "lineno", 0)
        key = (line, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.violations.append(Violation(line, message, unit.where))

    # -- traversal --

    def run(self) -> Result:
        if self.require_triton and not self.has_jit:
            self.violations.append(
                Violation(1, "defines no @triton.jit kernel: the computation must be written as a Triton kernel", "")
            )
        module_nodes: List[ast.AST] = []
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # Decorators, defaults and annotations run when the def runs.
                module_nodes.extend(stmt.decorator_list)
                module_nodes.append(stmt.args)
                if stmt.returns is not None:
                    module_nodes.append(stmt.returns)
            elif isinstance(stmt, ast.ClassDef):
                continue  # classes run their bodies at import: each is a unit
            else:
                module_nodes.append(stmt)
        queue: List[_Unit] = [_Unit("<module>", module_nodes, "module-level code")]
        done: Set[str] = {"<module>"}
        for name, cls in self.index.classes.items():
            where = f"class {name}" if name == ENTRY_MODEL else f"class {name} (runs at import)"
            queue.append(_Unit(name, [cls], where))
            done.add(name)
        # Called by the harness, or implicitly by Python (module __getattr__/__dir__).
        for name in self.index.functions:
            if name == ENTRY_FUNCTION or _is_dunder(name):
                queue.append(_Unit(name, [self.index.functions[name]], name))
                done.add(name)
        while queue:
            unit = queue.pop(0)
            refs: Set[str] = set()
            visitor = _Visitor(self, unit, refs)
            for node in unit.nodes:
                visitor.visit(node)
            for ref in sorted(refs - done):
                done.add(ref)
                if ref in self.index.functions:
                    queue.append(_Unit(ref, [self.index.functions[ref]], f"helper {ref}() (reached from {unit.name})"))
        entries = [n for n in (ENTRY_MODEL, ENTRY_FUNCTION) if n in self.index.classes or n in self.index.functions]
        return Result(not self.violations, self.violations, self.has_jit, entries)

    # -- rules on dotted names --

    def check_qualname(self, q: str, node: ast.AST, unit: _Unit, store: bool = False, triton: bool = False) -> bool:
        """Report q if banned. Returns True when reported."""
        parts = q.split(".")
        for mod, why in B.BANNED_MODULES.items():
            if q == mod or q.startswith(mod + "."):
                self.add(node, f"{q} is off limits ({why})", unit)
                return True
        if parts[0] in self.problem_names:
            self.add(node, f"{q} uses the reference problem; the kernel may not call the reference", unit)
            return True
        if triton and parts[0] == "torch":
            self.add(node, f"{q}: torch may not be used inside a @triton.jit function (use triton.language)", unit)
            return True
        if store:
            if q == "os.environ" or q.startswith("os.environ."):
                self.add(node, "writes os.environ", unit)
            else:
                self.add(node, f"assigns {q} (monkeypatching a module is not allowed)", unit)
            return True
        for prefix, why in B.BANNED_QUALIFIED.items():
            if q == prefix or q.startswith(prefix + "."):
                sep = " " if why.startswith(("is ", "hands ")) else ": "
                self.add(node, f"{q}{sep}{why}", unit)
                return True
        for prefix, why in B.BANNED_STRING_PREFIXES.items():
            if q.startswith(prefix):
                self.add(node, f"{q}: {why}", unit)
                return True
        if parts[0] == "torch" and len(parts) > 1:
            for p in parts[1:]:
                if _is_private(p):
                    self.add(node, f"{q} is a private PyTorch API (not allowed in a kernel)", unit)
                    return True
            leaf = _strip_inplace(parts[-1])
            if not triton and leaf in B.LIBRARY_OPS:
                self.add(node, f"{q} is a PyTorch library op; compute it in a Triton kernel", unit)
                return True
            if not triton and self.require_triton and leaf in B.STRICT_OPS:
                self.add(node, f"{q} computes in PyTorch; do the math in the Triton kernel", unit)
                return True
        if parts[0] == "os" and len(parts) >= 3 and parts[1] == "environ" and parts[2] in B.ENVIRON_WRITERS:
            self.add(node, f"{q} writes os.environ", unit)
            return True
        return False

    def check_reach(self, q: str, node: ast.AST, unit: _Unit) -> bool:
        """Rules on what a chain passes through (modules, allow-listed attributes, privates)."""
        parts = q.split(".")
        for i, p in enumerate(parts[1:], start=1):
            init_ok = i == len(parts) - 1 and self.resolver.resolve(".".join(parts[:i])).kind == CLASS
            if _is_dunder(p) and (p not in B.ALLOWED_DUNDERS or p == "__init__" and not init_ok):
                self.add(node, f"{q}: .{p} {B.BANNED_ATTRIBUTES.get(p, 'reaches interpreter internals')}", unit)
                return True
        r = self.resolver.resolve(q)
        for m in r.modules[1:]:
            root = m.split(".")[0]
            if root not in B.ALLOWED_IMPORTS and not any(m == b or m.startswith(b + ".") for b in B.BANNED_MODULES):
                self.add(node, f"{q} reaches module {m}, which a kernel may not use", unit)
                return True
        for mod, attr in r.steps:
            allowed = B.MODULE_ATTRIBUTES.get(mod)
            if allowed is not None and attr not in allowed:
                self.add(node, f"{mod}.{attr} is not allowed (a kernel may use only {', '.join(sorted(allowed))} from {mod})", unit)
                return True
            if _is_private(attr) and allowed is None and mod.split(".")[0] != "torch":
                self.add(node, f"{mod}.{attr} is private (not allowed in a kernel)", unit)
                return True
        return False


class _Visitor(ast.NodeVisitor):
    def __init__(self, checker: _Checker, unit: _Unit, refs: Set[str]) -> None:
        self.c = checker
        self.unit = unit
        self.refs = refs
        self.index = checker.index
        self.triton = False  # inside a @triton.jit body

    def report(self, node: ast.AST, message: str) -> None:
        self.c.add(node, message, self.unit)

    def place(self, node: ast.AST) -> str:
        return self.c.pos.get(id(node), "value")

    # -- definitions --

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.AST) -> None:
        for d in node.decorator_list:  # type: ignore[attr-defined]
            self.visit(d)
        self.visit(node.args)  # type: ignore[attr-defined]
        if node.returns is not None:  # type: ignore[attr-defined]
            self.visit(node.returns)  # type: ignore[attr-defined]
        name = node.name  # type: ignore[attr-defined]
        if name in ("__torch_function__", "__torch_dispatch__"):
            self.report(node, f"defines {name} (overriding torch dispatch is not allowed)")
        saved = self.triton
        self.triton = saved or name in self.c.jit_functions
        for stmt in node.body:  # type: ignore[attr-defined]
            self.visit(stmt)
        self.triton = saved

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id == "Model" and "Model" not in self.index.classes:
                self.report(base, "inherits from the reference Model; implement the computation yourself")
                continue
            for q in self.index.qualnames(base):
                if q == "torch.Tensor" or q.startswith("torch.Tensor."):
                    self.report(base, "subclasses torch.Tensor (tensor subclasses are not allowed)")
            for obj in self.c.resolved_objects(base):
                if self.c.resolver.is_nn_layer_class(obj):
                    self.report(base, f"subclasses torch.nn.{obj.__name__}, a layer that computes; subclass torch.nn.Module")  # type: ignore[attr-defined]
            if isinstance(base, ast.Name) and base.id in self.index.classes:
                self.refs.add(base.id)
            self.visit(base)
        for kw in node.keywords:
            self.visit(kw.value)
        for d in node.decorator_list:
            self.visit(d)
        for stmt in node.body:
            self.visit(stmt)

    def visit_If(self, node: ast.If) -> None:
        # `if __name__ == "__main__":` never runs when the harness imports the file.
        test = node.test
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and len(test.comparators) == 1
            and _const_str(test.comparators[0]) == "__main__"
        ):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)

    # -- imports --

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._check_import(node, a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.report(node, "relative imports are not allowed (the kernel is a single file)")
            return
        mod = node.module or ""
        if any(a.name == "*" for a in node.names):
            self.report(node, f"'from {mod} import *' hides what is called")
        if self._check_import(node, mod):
            return
        for a in node.names:
            if a.name != "*":
                self._check_import(node, f"{mod}.{a.name}", only_modules=True)

    def _check_import(self, node: ast.AST, name: str, only_modules: bool = False) -> bool:
        root = name.split(".")[0]
        if root in self.c.problem_names:
            self.report(node, f"imports {name}: the kernel may not use the reference problem")
            return True
        for mod, why in B.BANNED_MODULES.items():
            if name == mod or name.startswith(mod + "."):
                self.report(node, f"imports {name} ({why})")
                return True
        if not only_modules and root not in B.ALLOWED_IMPORTS:
            self.report(node, f"imports {name}: a kernel may import only " + ", ".join(sorted(B.ALLOWED_IMPORTS - {"__future__"})))
            return True
        if only_modules or "." in name:
            # What the import binds is checked where it is used; what it reaches, here.
            self.c.check_reach(name, node, self.unit)
        return False

    # -- names --

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        place = self.place(node)
        quals = self.index.qualnames(node)
        if quals:
            self._library(node, quals, place, store=False)
            return
        if node.id in self.c.layer_vars:
            self._layer_use(node, place)
        if node.id in self.index.bound:
            if node.id in self.index.functions or node.id in self.index.classes:
                self.refs.add(node.id)
            return
        if node.id == "Model":
            self.report(node, "uses the reference Model; the kernel must compute the result itself")
        elif node.id in B.ALLOWED_BUILTINS or (node.id in B.ATTRIBUTE_BUILTINS and place == "callee"):
            return
        else:
            why = B.BANNED_BUILTINS.get(node.id, "is not a builtin a kernel may use")
            if place == "callee":
                self.report(node, f"{node.id}() {why}")
            else:
                self.report(node, f"{node.id} used as a value: {why}")

    def _library(self, node: ast.AST, quals: Set[str], place: str, store: bool) -> None:
        """A name or chain that starts at an import."""
        for q in sorted(quals):
            r = self.c.resolver.resolve(q)
            names = [q] + ([r.canonical] if r.canonical != q else [])
            if any(self.c.check_qualname(n, node, self.unit, store=store, triton=self.triton) for n in names):
                continue
            if self.c.check_reach(q, node, self.unit):
                continue
            ident = None if self.triton else self.c.resolver.banned_identity(r.obj)
            if ident is not None:
                self.report(node, f"{q} is {ident}, a PyTorch op; compute it in a Triton kernel")
                continue
            if r.kind != DATA and place not in _PLACES[r.kind] and not store:
                shown = _show(node)
                if r.kind == MODULE:
                    self.report(node, f"{shown} is a module used as a value; use it only as {shown}.name")
                else:
                    self.report(node, f"{shown} is {_KIND_WORDS[r.kind]} used as a value; call it where it is needed")

    # -- attributes --

    def visit_Attribute(self, node: ast.Attribute) -> None:
        store = isinstance(node.ctx, (ast.Store, ast.Del))
        place = self.place(node)
        quals = self.index.qualnames(node)
        if quals:
            self._library(node, quals, place, store)
            return
        self._attribute_rules(node, store)
        if self.c.is_layer(node.value) and not store:
            if node.attr in self.c.resolver.module_methods() and node.attr not in B.LAYER_METHODS:
                self.report(node, f"{_show(node)}: .{node.attr} of a torch.nn layer is not allowed; read its parameters instead")
        if not store:
            if self.c.is_layer(node):
                self._layer_use(node, place)
            self._method_rule(node)
        else:
            self._store_rule(node)
        self.visit(node.value)

    def _attribute_rules(self, node: ast.Attribute, store: bool) -> None:
        attr, recv = node.attr, node.value
        if _is_dunder(attr):
            ok = attr in B.ALLOWED_DUNDERS and not store
            if ok and attr == "__init__":
                ok = _call_name(recv) == "super" or (isinstance(recv, ast.Name) and recv.id in self.index.classes)
            if not ok:
                why = B.BANNED_ATTRIBUTES.get(attr, "reaches interpreter internals")
                self.report(node, f".{attr} {why}")
            return
        if attr in B.BANNED_ATTRIBUTES:
            self.report(node, f".{attr} {B.BANNED_ATTRIBUTES[attr]}")
            return
        if attr in B.BANNED_METHOD_NAMES:
            if not (attr == "apply" and isinstance(recv, ast.Name) and recv.id in self.index.classes):
                self.report(node, f".{attr} {B.BANNED_METHOD_NAMES[attr]}")
            return
        if _is_private(attr):
            if attr not in self.index.stored_attrs or attr in self.c.resolver.internal_names():
                self.report(node, f".{attr} is a private attribute the kernel did not set (not allowed)")

    def _store_rule(self, node: ast.Attribute) -> None:
        recv = node.value
        if isinstance(recv, ast.Name) and (recv.id in ("self", "cls", "ctx") or recv.id in self.index.classes):
            return
        if node.attr in self.c.resolver.tensor_methods():
            self.report(node, f"assigns {_show(node)}: overriding a tensor method on an object is not allowed")

    def _method_rule(self, node: ast.Attribute) -> None:
        if self.triton:
            return
        name = _strip_inplace(node.attr)
        banned = name in B.LIBRARY_METHODS or (self.c.require_triton and name in B.STRICT_OPS)
        if not banned:
            return
        value = node.value
        if isinstance(value, ast.Call) and any(q in B.INFO_CALLS for q in self.index.qualnames(value.func)):
            return  # torch.finfo(t).max
        if isinstance(value, ast.Name) and value.id == "self" and node.attr in self.index.stored_attrs:
            return  # the class's own attribute (self.min = min_val)
        if name in B.LIBRARY_METHODS:
            self.report(node, f".{node.attr}() is a PyTorch library op (tensor method); compute it in a Triton kernel")
        else:
            self.report(node, f".{node.attr}() computes in PyTorch; do the math in the Triton kernel")

    def _layer_use(self, node: ast.AST, place: str) -> None:
        if place in ("base", "subscript", "len", "iter"):
            return
        shown = _show(node)
        doing = "calls it" if place == "callee" else "uses it as a value"
        self.report(
            node,
            f"{shown} is a torch.nn layer and the kernel {doing}; only read its parameters "
            f"({shown}.weight) and compute in a Triton kernel",
        )

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            for q in self.index.qualnames(node.value):
                self.c.check_qualname(q, node, self.unit, store=True)
        elif self.c.is_layer(node):
            self._layer_use(node, self.place(node))
        self.generic_visit(node)

    # -- operators and calls --

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and not self.triton:
            self.report(node, "the @ operator is a PyTorch matmul; compute it in a Triton kernel")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult) and not self.triton:
            self.report(node, "the @= operator is a PyTorch matmul; compute it in a Triton kernel")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in B.ATTRIBUTE_BUILTINS and func.id not in self.index.bound:
            self._dynamic_attr(node, func.id)
            return
        if isinstance(func, ast.Attribute) and func.attr in ("format", "format_map"):
            self._format_rule(node, func)
        for obj in self.c.resolved_objects(func):
            if self.c.resolver.is_nn_layer_class(obj) and id(node) not in self.c.allowed_builds:
                name = obj.__name__  # type: ignore[attr-defined]
                self.report(
                    node,
                    f"builds a torch.nn.{name} outside a model attribute; hold layers as self.name = nn.{name}(...) "
                    f"and compute with their parameters in a Triton kernel",
                )
        if isinstance(func, ast.Call):
            for q in self.index.qualnames(func.func):
                if q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper():
                    self.report(node, f"calls a {q.split('.')[-1]} module built on the spot; compute it in a Triton kernel")
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            if not (isinstance(func.value, ast.Name) and func.value.id == "self"):
                self.report(node, "calls another module's .forward(); compute the result in a Triton kernel")
        self.generic_visit(node)

    def _format_rule(self, node: ast.Call, func: ast.Attribute) -> None:
        template = _const_str(func.value)
        if template is None:
            if not self.index.qualnames(func.value):
                self.report(node, f".{func.attr}() on a computed string can reach attributes by name; use an f-string")
            return
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
        except ValueError:
            return
        for f in fields:
            if "._" in f or "[_" in f or ".__" in f:
                self.report(node, f"format field {{{f}}} reaches a private attribute")

    def _dynamic_attr(self, node: ast.Call, fname: str) -> None:
        args = node.args
        attr = _const_str(args[1]) if len(args) >= 2 else None
        if attr is None or node.keywords and fname != "getattr":
            self.report(node, f"{fname}() with a computed name is a dynamic lookup that hides what is called")
            self.generic_visit(node)
            return
        ctx: ast.expr_context = ast.Store() if fname in ("setattr", "delattr") else ast.Load()
        fake = ast.copy_location(ast.Attribute(value=args[0], attr=attr, ctx=ctx), node)
        self.c.pos[id(fake)] = self.place(node)
        self.c.pos[id(args[0])] = "base"
        self.visit(fake)
        for a in args[2:]:
            self.visit(a)
        for kw in node.keywords:
            self.visit(kw.value)


def check_source(
    source: str,
    require_triton: bool = True,
    problem_names: Iterable[str] = (),
) -> Result:
    """Check a candidate's source. A syntax error is a failed result."""
    try:
        checker = _Checker(source, require_triton, problem_names)
    except SyntaxError as exc:
        v = Violation(exc.lineno or 0, f"syntax error: {exc.msg}", "")
        return Result(False, [v], False, [])
    except (ValueError, RecursionError) as exc:
        v = Violation(0, f"cannot parse: {exc}", "")
        return Result(False, [v], False, [])
    return checker.run()


def check_file(path: str, require_triton: bool = True, problem_path: str = "") -> Result:
    with open(path, "r", encoding="utf-8") as f:
        source = f.read()
    names = [os.path.splitext(os.path.basename(problem_path))[0]] if problem_path else []
    return check_source(source, require_triton, names)


def main(argv: List[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        print("usage: python3 -m kagent_harness.static_check FILE [--no-triton]", file=sys.stderr)
        return 2
    result = check_file(args[0], require_triton="--no-triton" not in argv)
    print(json.dumps(result.as_dict(), indent=2))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
