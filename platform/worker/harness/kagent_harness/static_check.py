"""Static check of a candidate's source on the Python AST (never by regex).

What runs in the harness process is checked: module-level (import-time) code,
``kernel_function`` and every method of ``ModelNew``, and, transitively, every
function and class of the same file that checked code refers to. The bodies of
``@triton.jit`` functions are Triton, not Python, and are not checked against
the PyTorch ban list.

The ban list is data (the tables in ``banlist``), so it is easy to read and extend.
Names are resolved through imports and simple assignments anywhere in the file
(``import torch.nn.functional as Q``, ``from torch import matmul as mm``,
``T = torch``), so aliases do not hide a call; dynamic lookups
(``getattr(torch, "mat" + "mul")``, ``eval``, ``__dict__``) are banned as such.

Usage as a program: ``python3 -m kagent_harness.static_check FILE [--no-triton]``
prints a JSON verdict.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .banlist import (
    BANNED_ATTRIBUTES,
    BANNED_BUILTINS,
    ALLOWED_IMPORTS,
    BANNED_MODULES,
    BANNED_QUALIFIED,
    BANNED_STRING_PREFIXES,
    ENVIRON_WRITERS,
    INFO_CALLS,
    LIBRARY_METHODS,
    LIBRARY_OPS,
    PROBLEM_MODULES,
    STRICT_OPS,
    TRITON_DECORATORS,
    TRITON_JIT,
)

ENTRY_FUNCTION = "kernel_function"
ENTRY_MODEL = "ModelNew"


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


# --- Analysis -------------------------------------------------------------------


def _dotted(node: ast.AST) -> Optional[Tuple[str, List[str]]]:
    """(root name, attribute path) of a pure Name/Attribute chain."""
    attrs: List[str] = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node.id, list(reversed(attrs))
    return None


def _const_str(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _strip_inplace(name: str) -> str:
    if name.endswith("_") and not name.endswith("__"):
        return name[:-1]
    return name


class _Index:
    """Names defined in the file and the aliases of imported modules."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions: Dict[str, ast.AST] = {}
        self.classes: Dict[str, ast.ClassDef] = {}
        self.aliases: Dict[str, Set[str]] = {}
        self.bound: Set[str] = set()  # every name bound anywhere in the file
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                self.classes[stmt.name] = stmt
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self._alias(a.asname, a.name)
                    else:
                        root = a.name.split(".")[0]
                        self._alias(root, root)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name != "*":
                        self._alias(a.asname or a.name, f"{node.module}.{a.name}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
        # Simple assignments of resolvable values (T = torch, mm = torch.matmul), to a fixpoint.
        for _ in range(6):
            changed = False
            for node in ast.walk(tree):
                pairs: List[Tuple[ast.AST, ast.AST]] = []
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        pairs.append((target, node.value))
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    pairs.append((node.target, node.value))
                for target, value in pairs:
                    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
                        pairs.extend(zip(target.elts, value.elts))
                        continue
                    if isinstance(target, ast.Name):
                        for q in self.qualnames(value):
                            if q not in self.aliases.get(target.id, set()):
                                self._alias(target.id, q)
                                changed = True
            if not changed:
                break

    def _alias(self, name: str, qual: str) -> None:
        self.aliases.setdefault(name, set()).add(qual)
        self.bound.add(name)

    def qualnames(self, node: ast.AST) -> Set[str]:
        """Every dotted name an expression may denote (empty if unknown)."""
        if isinstance(node, ast.Name):
            return set(self.aliases.get(node.id, set()))
        if isinstance(node, ast.Attribute):
            return {f"{q}.{node.attr}" for q in self.qualnames(node.value)}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            if len(node.args) >= 2 and _const_str(node.args[1]) is not None:
                attr = _const_str(node.args[1])
                return {f"{q}.{attr}" for q in self.qualnames(node.args[0])}
        return set()

    def is_triton_decorator(self, node: ast.AST, names: Set[str]) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        return any(q in names for q in self.qualnames(target))


class _Unit:
    """A piece of code that runs: module level, a function, or a class."""

    def __init__(self, name: str, nodes: List[ast.AST], where: str, cls: Optional[ast.ClassDef] = None) -> None:
        self.name = name
        self.nodes = nodes
        self.where = where
        self.cls = cls


class _Checker:
    def __init__(self, source: str, require_triton: bool, problem_names: Iterable[str]) -> None:
        self.source = source
        self.require_triton = require_triton
        self.problem_names = set(PROBLEM_MODULES) | {n for n in problem_names if n}
        self.violations: List[Violation] = []
        self._seen: Set[Tuple[int, str]] = set()
        self.tree = ast.parse(source)
        self.index = _Index(self.tree)
        self.jit_functions: Set[str] = set()
        self.has_jit = False
        self._find_jit()
        self.self_attrs: Dict[str, Set[str]] = {}  # class -> attributes assigned on self
        self.module_attrs: Dict[str, Dict[str, str]] = {}  # class -> self.attr -> nn class
        for name, cls in self.index.classes.items():
            self._scan_class(name, cls)

    # -- setup --

    def _find_jit(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self.index.is_triton_decorator(d, TRITON_JIT) for d in node.decorator_list):
                    self.has_jit = True
                if any(self.index.is_triton_decorator(d, TRITON_DECORATORS) for d in node.decorator_list):
                    self.jit_functions.add(node.name)
            elif isinstance(node, ast.Call) and self.index.is_triton_decorator(node.func, TRITON_JIT):
                # kernel = triton.jit(fn)
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in self.index.functions:
                        self.jit_functions.add(arg.id)
                        self.has_jit = True

    def _scan_class(self, name: str, cls: ast.ClassDef) -> None:
        attrs: Set[str] = set()
        modules: Dict[str, str] = {}
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id == "self":
                    attrs.add(node.attr)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for q in self.index.qualnames(node.value.func):
                    if q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper():
                        leaf = q.split(".")[-1]
                        if leaf.startswith("Parameter") or leaf in ("Module", "ModuleList", "ModuleDict"):
                            continue
                        for target in node.targets:
                            if (
                                isinstance(target, ast.Attribute)
                                and isinstance(target.value, ast.Name)
                                and target.value.id == "self"
                            ):
                                modules[target.attr] = leaf
        self.self_attrs[name] = attrs
        self.module_attrs[name] = modules

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
                module_nodes.extend(stmt.decorator_list)
                module_nodes.extend(stmt.args.defaults)
                module_nodes.extend(d for d in stmt.args.kw_defaults if d is not None)
            elif isinstance(stmt, ast.ClassDef):
                continue  # classes run their bodies at import: handled as units when reachable
            else:
                module_nodes.append(stmt)
        queue: List[_Unit] = [_Unit("<module>", module_nodes, "module-level code")]
        done: Set[str] = {"<module>"}
        # Class bodies run at import time, so every class is a unit.
        for name, cls in self.index.classes.items():
            where = f"class {name}" if name == ENTRY_MODEL else f"class {name} (runs at import)"
            queue.append(self._class_unit(name, cls, where))
            done.add(name)
        if ENTRY_FUNCTION in self.index.functions:
            queue.append(self._function_unit(ENTRY_FUNCTION, ENTRY_FUNCTION))
            done.add(ENTRY_FUNCTION)
        while queue:
            unit = queue.pop(0)
            for ref in self._check_unit(unit):
                if ref in done:
                    continue
                done.add(ref)
                if ref in self.index.functions:
                    queue.append(self._function_unit(ref, f"helper {ref}() (reached from {unit.name})"))
        entries = [n for n in (ENTRY_MODEL, ENTRY_FUNCTION) if n in self.index.classes or n in self.index.functions]
        return Result(not self.violations, self.violations, self.has_jit, entries)

    def _function_unit(self, name: str, where: str) -> _Unit:
        fn = self.index.functions[name]
        return _Unit(name, [fn], where)

    def _class_unit(self, name: str, cls: ast.ClassDef, where: str) -> _Unit:
        return _Unit(name, [cls], where, cls)

    def _check_unit(self, unit: _Unit) -> Set[str]:
        """Check a unit; return the names of local functions/classes it refers to."""
        refs: Set[str] = set()
        visitor = _Visitor(self, unit, refs)
        for node in unit.nodes:
            visitor.visit(node)
        return refs

    # -- rules on dotted names --

    def check_qualname(self, q: str, node: ast.AST, unit: _Unit, store: bool = False) -> bool:
        """Report q if banned. Returns True when reported."""
        parts = q.split(".")
        for mod, why in BANNED_MODULES.items():
            if q == mod or q.startswith(mod + "."):
                self.add(node, f"{q} is off limits ({why})", unit)
                return True
        if parts[0] in self.problem_names:
            self.add(node, f"{q} uses the reference problem; the kernel may not call the reference", unit)
            return True
        if store:
            if q == "os.environ" or q.startswith("os.environ."):
                self.add(node, "writes os.environ", unit)
            else:
                self.add(node, f"assigns {q} (monkeypatching a module is not allowed)", unit)
            return True
        for prefix, why in BANNED_QUALIFIED.items():
            if q == prefix or q.startswith(prefix + "."):
                sep = " " if why.startswith(("is ", "hands ")) else ": "
                self.add(node, f"{q}{sep}{why}", unit)
                return True
        for prefix, why in BANNED_STRING_PREFIXES.items():
            if q.startswith(prefix):
                self.add(node, f"{q}: {why}", unit)
                return True
        if parts[0] == "torch" and len(parts) > 1:
            for p in parts[1:]:
                if p.startswith("_") and not (p.startswith("__") and p.endswith("__")):
                    self.add(node, f"{q} is a private PyTorch API (not allowed in a kernel)", unit)
                    return True
            leaf = _strip_inplace(parts[-1])
            if leaf in LIBRARY_OPS:
                self.add(node, f"{q} is a PyTorch library op; compute it in a Triton kernel", unit)
                return True
            if self.require_triton and leaf in STRICT_OPS:
                self.add(node, f"{q} computes in PyTorch; do the math in the Triton kernel", unit)
                return True
        if parts[0] == "os" and len(parts) >= 3 and parts[1] == "environ" and parts[2] in ENVIRON_WRITERS:
            self.add(node, f"{q} writes os.environ", unit)
            return True
        return False


class _Visitor(ast.NodeVisitor):
    def __init__(self, checker: _Checker, unit: _Unit, refs: Set[str]) -> None:
        self.c = checker
        self.unit = unit
        self.refs = refs
        self.index = checker.index
        self.cls_name = unit.cls.name if unit.cls is not None else None

    def report(self, node: ast.AST, message: str) -> None:
        self.c.add(node, message, self.unit)

    # Functions: skip Triton bodies.
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.AST) -> None:
        for d in node.decorator_list:  # type: ignore[attr-defined]
            self.visit(d)
        self.visit(node.args)  # type: ignore[attr-defined]
        if node.name in self.c.jit_functions:  # type: ignore[attr-defined]
            return  # Triton code, not Python that runs in the harness
        if node.name in ("__torch_function__", "__torch_dispatch__"):  # type: ignore[attr-defined]
            self.report(node, f"defines {node.name} (overriding torch dispatch is not allowed)")  # type: ignore[attr-defined]
        for stmt in node.body:  # type: ignore[attr-defined]
            self.visit(stmt)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id == "Model" and "Model" not in self.index.classes:
                self.report(base, "inherits from the reference Model; implement the computation yourself")
                continue
            for q in self.index.qualnames(base):
                if q == "torch.Tensor" or q.startswith("torch.Tensor."):
                    self.report(base, "subclasses torch.Tensor (tensor subclasses are not allowed)")
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
        for mod, why in BANNED_MODULES.items():
            if name == mod or name.startswith(mod + "."):
                self.report(node, f"imports {name} ({why})")
                return True
        if not only_modules and root not in ALLOWED_IMPORTS:
            self.report(node, f"imports {name}: a kernel may import only " + ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"})))
            return True
        return False

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id in BANNED_BUILTINS and node.id not in self.index.bound:
                self.report(node, f"{node.id}() {BANNED_BUILTINS[node.id]}")
            elif node.id in ("getattr", "setattr", "delattr") and node.id not in self.index.bound:
                # Reached only when not the func of a Call (calls are handled in visit_Call).
                self.report(node, f"{node.id} used as a value is a dynamic lookup that hides what is called")
            elif node.id == "Model" and "Model" not in self.index.classes and "Model" not in self.index.functions:
                self.report(node, "uses the reference Model; the kernel must compute the result itself")
            elif node.id in self.index.functions or node.id in self.index.classes:
                self.refs.add(node.id)
            for q in self.index.qualnames(node):
                self.c.check_qualname(q, node, self.unit)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        store = isinstance(node.ctx, (ast.Store, ast.Del))
        if node.attr in BANNED_ATTRIBUTES:
            self.report(node, f".{node.attr} {BANNED_ATTRIBUTES[node.attr]}")
            self.visit(node.value)
            return
        quals = self.index.qualnames(node)
        if quals:
            for q in quals:
                self.c.check_qualname(q, node, self.unit, store=store)
            # The chain is fully resolved; its parts were checked as one name.
            return
        if not store:
            self._method_rule(node)
        self.visit(node.value)

    def _method_rule(self, node: ast.Attribute) -> None:
        name = _strip_inplace(node.attr)
        banned = name in LIBRARY_METHODS or (self.c.require_triton and name in STRICT_OPS)
        if not banned:
            return
        value = node.value
        if isinstance(value, ast.Call) and any(q in INFO_CALLS for q in self.index.qualnames(value.func)):
            return  # torch.finfo(t).max
        if isinstance(value, ast.Name) and value.id == "self" and self.cls_name is not None:
            if node.attr in self.c.self_attrs.get(self.cls_name, set()):
                return  # the class's own attribute (self.min = min_val)
        if name in LIBRARY_METHODS:
            self.report(node, f".{node.attr}() is a PyTorch library op (tensor method); compute it in a Triton kernel")
        else:
            self.report(node, f".{node.attr}() computes in PyTorch; do the math in the Triton kernel")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            for q in self.index.qualnames(node.value):
                self.c.check_qualname(q, node, self.unit, store=True)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self.report(node, "the @ operator is a PyTorch matmul; compute it in a Triton kernel")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult):
            self.report(node, "the @= operator is a PyTorch matmul; compute it in a Triton kernel")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "delattr") and func.id not in self.index.bound:
            self._dynamic_attr(node, func.id)
            return
        if isinstance(func, ast.Call):
            for q in self.index.qualnames(func.func):
                if q.startswith("torch.nn.") and q.split(".")[-1][:1].isupper():
                    self.report(node, f"calls a {q.split('.')[-1]} module built on the spot; compute it in a Triton kernel")
        if isinstance(func, ast.Attribute):
            if func.attr == "forward" and not (isinstance(func.value, ast.Name) and func.value.id == "self"):
                self.report(node, "calls another module's .forward(); compute the result in a Triton kernel")
            if (
                isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and self.cls_name is not None
                and func.attr in self.c.module_attrs.get(self.cls_name, {})
            ):
                kind = self.c.module_attrs[self.cls_name][func.attr]
                self.report(
                    node,
                    f"calls self.{func.attr} (a torch.nn.{kind}) which computes in PyTorch; "
                    f"use its parameters in a Triton kernel instead",
                )
        self.generic_visit(node)

    def _dynamic_attr(self, node: ast.Call, fname: str) -> None:
        args = node.args
        attr = _const_str(args[1]) if len(args) >= 2 else None
        if attr is None:
            self.report(node, f"{fname}() with a computed name is a dynamic lookup that hides what is called")
            for a in args:
                self.visit(a)
            return
        if attr in BANNED_ATTRIBUTES:
            self.report(node, f"{fname}(..., {attr!r}) {BANNED_ATTRIBUTES[attr]}")
        target = args[0]
        quals = self.index.qualnames(target)
        if fname in ("setattr", "delattr"):
            if quals:
                for q in quals:
                    self.c.check_qualname(f"{q}.{attr}", node, self.unit, store=True)
        else:
            if quals:
                for q in quals:
                    self.c.check_qualname(f"{q}.{attr}", node, self.unit)
            else:
                fake = ast.Attribute(value=target, attr=attr, ctx=ast.Load())
                ast.copy_location(fake, node)
                self._method_rule(fake)
        for a in args:
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
