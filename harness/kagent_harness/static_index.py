"""What the static checker reads off a kernel's syntax tree before checking
it: names of calls and constants, line positions, and the index of the
module's definitions and assignments (static_check.py walks them)."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple


def _const_str(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _strip_inplace(name: str) -> str:
    if name.endswith("_") and not name.endswith("__"):
        return name[:-1]
    return name


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _is_private(name: str) -> bool:
    return name.startswith("_") and not _is_dunder(name)


def _show(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _call_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


def _positions(tree: ast.AST) -> Dict[int, str]:
    """The syntactic place of each expression that is not a plain value."""
    pos: Dict[int, str] = {}

    def types_at(node: ast.AST) -> None:
        pos[id(node)] = "type"
        if isinstance(node, ast.Tuple):
            for e in node.elts:
                types_at(e)

    annotations: List[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            pos[id(node.value)] = "base"
        elif isinstance(node, ast.Call):
            pos[id(node.func)] = "callee"
            name = _call_name(node)
            if name in ("isinstance", "issubclass") and len(node.args) == 2:
                types_at(node.args[1])
            elif name == "len" and len(node.args) == 1:
                pos[id(node.args[0])] = "len"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in node.decorator_list:
                pos[id(d)] = "decorator"
            if isinstance(node, ast.ClassDef):
                for b in node.bases:
                    pos[id(b)] = "type"
            elif node.returns is not None:
                annotations.append(node.returns)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        elif isinstance(node, ast.ExceptHandler) and node.type is not None:
            types_at(node.type)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            pos[id(node.exc)] = "type"
        elif isinstance(node, ast.Subscript):
            pos[id(node.value)] = "subscript"
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            pos[id(node.iter)] = "iter"
            if _call_name(node.iter) in ("enumerate", "zip"):
                for a in node.iter.args:  # type: ignore[attr-defined]
                    pos[id(a)] = "iter"
    for ann in annotations:
        for sub in ast.walk(ann):
            if isinstance(sub, (ast.Name, ast.Attribute)) and pos.get(id(sub)) != "base":
                pos[id(sub)] = "annotation"
    return pos


class _Index:
    """Names defined in the file and the aliases of imported names."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions: Dict[str, ast.AST] = {}
        self.classes: Dict[str, ast.ClassDef] = {}
        self.aliases: Dict[str, Set[str]] = {}
        self.bound: Set[str] = set()  # every name bound anywhere in the file
        self.stored_attrs: Set[str] = set()  # attribute names the file assigns
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
                if isinstance(node, ast.ClassDef):
                    for s in node.body:
                        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            self.stored_attrs.add(s.name)
                        for t in s.targets if isinstance(s, ast.Assign) else [getattr(s, "target", None)]:
                            if isinstance(t, ast.Name):
                                self.stored_attrs.add(t.id)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bound.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                self.bound.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                self.stored_attrs.add(node.attr)

    def _alias(self, name: str, qual: str) -> None:
        self.aliases.setdefault(name, set()).add(qual)
        self.bound.add(name)

    def qualnames(self, node: ast.AST) -> Set[str]:
        """Every dotted library name an expression may denote (empty if none)."""
        if isinstance(node, ast.Name):
            return set(self.aliases.get(node.id, set()))
        if isinstance(node, ast.Attribute):
            return {f"{q}.{node.attr}" for q in self.qualnames(node.value)}
        if _call_name(node) == "getattr" and "getattr" not in self.bound:
            args = node.args  # type: ignore[attr-defined]
            if len(args) >= 2 and _const_str(args[1]) is not None:
                return {f"{q}.{_const_str(args[1])}" for q in self.qualnames(args[0])}
        return set()

    def is_triton_decorator(self, node: ast.AST, names: Set[str]) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        return any(q in names for q in self.qualnames(target))
