"""A candidate's code fingerprint, for finding a rewrite that repeats an
earlier candidate of the run before any of it is verified or timed.

Two methods, the hash recorded with its method:

- ``ttir``: the candidate is called once on the problem's first draw in its
  runner (the judge never imports a candidate) with every Triton launch
  recorded instead of run; each launched ``@triton.jit`` function is compiled
  to Triton IR (TTIR) for the arguments, constexprs, options (num_warps, ...)
  and grid of its launch, for the session's GPU or, on the cpu platform
  (``TRITON_INTERPRET=1``), for ``GPUTarget("cuda", 90, 32)``: Triton 3.6
  compiles to TTIR without a GPU. The hash covers the TTIR with source
  locations and value names removed, the launch's options and grid, and the
  host code (the module less its jit functions, as below): kernels that
  compile alike under another spelling share it; kernels launched with
  another specialisation, or whose host code differs, do not.
- ``ast``: a hash of the module's normalised abstract syntax tree.
  Comments, docstrings, formatting and the names of each function's
  parameters and local variables do not count; everything else does,
  including every literal at a launch site, so two kernels launched with
  different specialisations never share it. Used where no launch was seen
  or the compile failed (the record's reason says why), and by the
  ``fingerprint`` request without a problem.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Any, Dict, List, Union

METHOD_AST = "ast"
METHOD_TTIR = "ttir"

_Func = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]


def fingerprint_source(source: str) -> Dict[str, Any]:
    """``{"hash", "method", "kernels"}``; hash is None (with a reason) for a
    source that does not parse: verification rejects it on its own."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        return {"hash": None, "method": METHOD_AST, "kernels": [], "reason": f"does not parse: {exc}"}
    kernels = sorted(n.name for n in ast.walk(tree) if _is_jit(n))
    return {"hash": _tree_hash(tree), "method": METHOD_AST, "kernels": kernels}


def _tree_hash(tree: ast.AST) -> str:
    tree = _Normalizer().visit(tree)
    dump = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(dump.encode("utf-8")).hexdigest()


def _is_jit(node: ast.AST) -> bool:
    """Whether node is a function decorated with something ending in jit."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name.endswith("jit"):
            return True
    return False


def host_hash(source: str) -> str:
    """The ast hash of the module less its jit functions (their code is in
    the TTIR)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                setattr(node, field, [s for s in body if not _is_jit(s)] or [ast.Pass()])
    return _tree_hash(tree)


def _drop_docstring(body: List[ast.stmt]) -> List[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:] or [ast.Pass()]
    return body


def _locals_of(fn: _Func) -> List[str]:
    """A function's parameters and the names it binds, in order of first
    appearance, less those it declares global or nonlocal. Nested functions
    are renamed on their own."""
    args = fn.args
    names: List[str] = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    for a in (args.vararg, args.kwarg):
        if a is not None:
            names.append(a.arg)
    declared: set = set()
    stack: List[ast.AST] = list(fn.body) if isinstance(fn.body, list) else [fn.body]
    while stack:
        node = stack.pop(0)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.append(node.id)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
            continue  # its body is another scope
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    seen: Dict[str, None] = {}
    for n in names:
        if n not in declared:
            seen.setdefault(n, None)
    return list(seen)


class _Normalizer(ast.NodeTransformer):
    """Drops docstrings and renames each function's locals to their order of
    first appearance."""

    def __init__(self) -> None:
        self.scopes: List[Dict[str, str]] = []

    def _rename(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return name

    def _function(self, node: _Func) -> Any:
        if not isinstance(node, ast.Lambda):
            node.body = _drop_docstring(node.body)
            # Decorators and defaults are evaluated in the enclosing scope.
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            node.returns = self.visit(node.returns) if node.returns is not None else None
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [self.visit(d) if d is not None else None for d in node.args.kw_defaults]
        depth = len(self.scopes)
        self.scopes.append({n: f"_v{depth}_{i}" for i, n in enumerate(_locals_of(node))})
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs + \
                [x for x in (node.args.vararg, node.args.kwarg) if x is not None]:
            a.arg = self._rename(a.arg)
            a.annotation = self.visit(a.annotation) if a.annotation is not None else None
            a.type_comment = None
        if isinstance(node.body, list):
            node.body = [self.visit(s) for s in node.body]
        else:
            node.body = self.visit(node.body)
        self.scopes.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        node.name = self._rename(node.name)
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        node.name = self._rename(node.name)
        return self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        return self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        node.body = _drop_docstring(node.body)
        self.generic_visit(node)
        return node

    def visit_Module(self, node: ast.Module) -> Any:
        node.body = _drop_docstring(node.body)
        node.type_ignores = []
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> Any:
        node.id = self._rename(node.id)
        return node

    def visit_Global(self, node: ast.Global) -> Any:
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:
        node.names = [self._rename(n) for n in node.names]
        return node


def fingerprint_file(path: str) -> Dict[str, Any]:
    """The fingerprint of the candidate file at path."""
    from .candidate import read_source

    return fingerprint_source(read_source(path))


