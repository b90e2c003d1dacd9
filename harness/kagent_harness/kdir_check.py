"""Static check of a kernel dir's Python files, without importing them.

Usage: python3 -m kagent_harness.kdir_check FILE [FILE ...]

Prints one JSON object: {"files": {path: {"error": str|null, "line": int|null,
"classes": [...], "functions": [...], "triton_jit": [...], "assigns": [...]}}}.
Only the standard library is used, so this runs where torch is not installed.
"""
from __future__ import annotations

import ast
import json
import sys
from typing import Any


def _decorator_names(node: ast.AST) -> list[str]:
    names = []
    for dec in getattr(node, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        parts = []
        while isinstance(target, ast.Attribute):
            parts.append(target.attr)
            target = target.value
        if isinstance(target, ast.Name):
            parts.append(target.id)
        names.append(".".join(reversed(parts)))
    return names


def describe(path: str) -> dict[str, Any]:
    """Return the top-level definitions of one Python file."""
    out: dict[str, Any] = {"error": None, "line": None, "classes": [],
                           "functions": [], "triton_jit": [], "assigns": []}
    try:
        with open(path, "rb") as f:
            source = f.read()
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        out["error"] = f"syntax error: {e.msg}"
        out["line"] = e.lineno
        return out
    except (OSError, ValueError) as e:
        out["error"] = f"cannot read: {e}"
        return out
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out["classes"].append(node.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out["functions"].append(node.name)
            if any(n.split(".")[-1] in ("jit", "autotune", "heuristics")
                   for n in _decorator_names(node)):
                out["triton_jit"].append(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out["assigns"].append(t.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out["assigns"].append(node.target.id)
    return out


def main(argv: list[str]) -> int:
    files = {p: describe(p) for p in argv}
    sys.stdout.write(json.dumps({"files": files}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
