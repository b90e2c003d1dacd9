"""Find the tunable launch and constexpr knobs of a Triton kernel file.

Usage: python3 knobs.py FILE   (FILE "-" reads the source from stdin)

Prints one JSON object: {"error": str|null, "line": int|null, "knobs": [...],
"autotune": [...]}; each autotune entry is a literal ``configs=[...]`` list of
an ``@triton.autotune`` kernel with two or more ``triton.Config`` entries: the
kernel's name, the list's span and each entry's span.
Only the standard library is used and nothing is imported or run, so this
works where torch and triton are not installed.

A knob is an integer literal that a launch consumes and that can be changed
without changing what the kernel computes:

- launch sites ``kernel[grid](..., BLOCK=1024, num_warps=4)``: literal keyword
  arguments (and literal positional arguments bound to ``tl.constexpr``
  parameters of a kernel defined in the file) whose names are knob names;
- the assignments (``BLOCK = 1024``), parameter defaults and ``self.X = 1024``
  attributes that such arguments are names of, looked up in the enclosing
  function, its enclosing functions, its class and the module;
- ``triton.Config({...}, num_warps=.., num_stages=..)`` entries;
- "implicit" num_warps/num_stages: an insertion point at a launch of a plain
  ``@triton.jit`` kernel of the file that does not pass them (Triton's
  defaults are 4 warps and 3 stages).

Computed values (``triton.next_power_of_2(n)``, ``min(...)``, conditional
expressions) are never knobs; neither is anything in a comment, a string or
an f-string. A block that a kernel uses as ``tl.arange(0, BLOCK)`` without
tiling over it (no ``pid * BLOCK``, no loop over it) while reducing must cover
the whole reduced dimension: its knob carries ``min`` = its current value, so
only larger values are proposed.

Each knob: name (the identifier in the source: variable, keyword or config
key), param (the launch keyword or kernel parameter it feeds), kernel (the
kernel's name, "" when unknown), kind (block|warps|stages|group), value, site
(launch|assign|default|attribute|config|implicit), line and col (1-based; col
counts bytes), end_line, end_col (exclusive), offset and end (byte offsets
into the file), linked (further spans edited together with this one, e.g. the
same literal in the launch grid), insert (text to insert before the value at
an implicit site), min (0: none), note.
"""
from __future__ import annotations

import ast
import json
import re
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

WARPS = "warps"
STAGES = "stages"
BLOCK = "block"
GROUP = "group"
SPLIT = "split"

DEFAULT_WARPS = 4
DEFAULT_STAGES = 3

_BLOCK_RE = re.compile(r"^[A-Z0-9_]*(BLOCK|TILE)[A-Z0-9_]*$")
_GROUP_RE = re.compile(r"^GROUP(_SIZE)?(_[A-Z])?$")
_SPLIT_RE = re.compile(r"^SPLIT(_[A-Z])?$")
_REDUCTIONS = frozenset({"sum", "max", "min", "reduce", "argmax", "argmin",
                         "xor_sum", "cumsum", "cumprod", "associative_scan"})


def kind_of(name: str) -> Optional[str]:
    """The knob kind of a launch keyword or constexpr name, or None."""
    if name == "num_warps":
        return WARPS
    if name == "num_stages":
        return STAGES
    if _GROUP_RE.match(name):
        return GROUP
    if _SPLIT_RE.match(name):
        return SPLIT
    if _BLOCK_RE.match(name):
        return BLOCK
    return None


def _int_literal(node: Optional[ast.AST]) -> Optional[int]:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(_dotted(node.func))
    return ".".join(reversed(parts))


def _decorators(fn: ast.AST) -> List[Tuple[str, ast.AST]]:
    out = []
    for dec in getattr(fn, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        out.append((_dotted(target).split(".")[-1], dec))
    return out


def _children(node: ast.AST):
    """Child nodes, never entering f-strings."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.JoinedStr):
            continue
        yield child


def _walk(node: ast.AST, into_scopes: bool = True):
    """Nodes under node (node first) in source order, never entering
    f-strings; with into_scopes False it does not enter nested functions,
    lambdas or classes (their bodies are other scopes)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = [c for c in _children(n) if into_scopes or not isinstance(c, _SCOPES)]
        stack.extend(reversed(kids))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class _Lines:
    """Maps (line, col) of the AST to byte offsets of the source."""

    def __init__(self, source: bytes) -> None:
        # The tokenizer drops a UTF-8 byte order mark: columns of line 1
        # start after it.
        self.bom = 3 if source.startswith(b"\xef\xbb\xbf") else 0
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col + (self.bom if line == 1 else 0)


def _span(lines: _Lines, node: ast.AST) -> Dict[str, int]:
    return {
        "line": node.lineno, "col": node.col_offset + 1,
        "end_line": node.end_lineno, "end_col": node.end_col_offset + 1,
        "offset": lines.offset(node.lineno, node.col_offset),
        "end": lines.offset(node.end_lineno, node.end_col_offset),
    }


class _Kernel:
    """What the analysis needs to know about one @triton.jit function."""

    def __init__(self, fn: ast.AST) -> None:
        self.name = fn.name
        self.params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        decs = _decorators(fn)
        self.plain_jit = [d for d, _ in decs] == ["jit"]
        self.autotune = next((node for d, node in decs if d == "autotune"), None)
        self.has_loop = any(isinstance(n, (ast.For, ast.While)) for n in _walk(fn))
        reduces = False
        arange, tiled = set(), set()
        for n in _walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                if n.func.attr in _REDUCTIONS:
                    reduces = True
                if n.func.attr == "arange" and len(n.args) == 2 and isinstance(n.args[1], ast.Name):
                    arange.add(n.args[1].id)
                if n.func.attr == "cdiv":
                    tiled.update(x.id for a in n.args for x in _walk(a) if isinstance(x, ast.Name))
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mult, ast.FloorDiv)):
                tiled.update(side.id for side in (n.left, n.right) if isinstance(side, ast.Name))
            if isinstance(n, ast.For):
                tiled.update(x.id for x in _walk(n.iter) if isinstance(x, ast.Name))
        # Blocks that must span the whole reduced dimension.
        self.covers = (arange - tiled) if reduces else set()


def _assignments(n: ast.AST) -> List[Tuple[ast.AST, Optional[ast.AST]]]:
    """(target, value) pairs bound by one node; value None when the target is
    bound to something other than one known expression."""
    pairs: List[Tuple[ast.AST, Optional[ast.AST]]] = []
    if isinstance(n, ast.Assign):
        for t in n.targets:
            pairs.extend(_unpack(t, n.value))
    elif isinstance(n, ast.AnnAssign) and n.value is not None:
        pairs.append((n.target, n.value))
    elif isinstance(n, ast.AugAssign):
        pairs.append((n.target, None))
    elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
        pairs.extend((x, None) for x in _walk(n.target) if isinstance(x, ast.Name))
    elif isinstance(n, (ast.With, ast.AsyncWith)):
        for item in n.items:
            if item.optional_vars is not None:
                pairs.extend((x, None) for x in _walk(item.optional_vars) if isinstance(x, ast.Name))
    elif isinstance(n, ast.NamedExpr):
        pairs.append((n.target, n.value))
    return pairs


def _unpack(target: ast.AST, value: ast.AST) -> List[Tuple[ast.AST, Optional[ast.AST]]]:
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                and not any(isinstance(e, ast.Starred) for e in target.elts + value.elts):
            out: List[Tuple[ast.AST, Optional[ast.AST]]] = []
            for t, v in zip(target.elts, value.elts):
                out.extend(_unpack(t, v))
            return out
        return [(x, None) for x in _walk(target) if isinstance(x, (ast.Name, ast.Attribute))]
    return [(target, value)]


class _Scope:
    """One function (or the module) with the values bound to its names."""

    def __init__(self, node: ast.AST, parent: Optional["_Scope"]) -> None:
        self.parent = parent
        self.assigns: Dict[str, List[Optional[ast.AST]]] = {}  # name -> values
        self.params: Dict[str, Optional[ast.AST]] = {}  # name -> default value
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pos = a.posonlyargs + a.args
            defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
            for arg, d in zip(pos, defaults):
                self.params[arg.arg] = d
            for arg, d in zip(a.kwonlyargs, a.kw_defaults):
                self.params[arg.arg] = d
            for extra in (a.vararg, a.kwarg):
                if extra is not None:
                    self.params[extra.arg] = None
        for stmt in node.body:
            if isinstance(stmt, _SCOPES):
                continue
            for n in _walk(stmt, into_scopes=False):
                for target, value in _assignments(n):
                    if isinstance(target, ast.Name):
                        self.assigns.setdefault(target.id, []).append(value)

    def resolve(self, name: str) -> List[Tuple[Optional[ast.AST], str, "_Scope"]]:
        """The values a name may hold where it is read, from the innermost
        scope binding it, each with how it is bound ("assign" or "default")
        and the scope its expression is evaluated in."""
        s: Optional[_Scope] = self
        while s is not None:
            if name in s.assigns:
                return [(v, "assign", s) for v in s.assigns[name]]
            if name in s.params:
                # A default is evaluated where the function is defined.
                return [(s.params[name], "default", s.parent or s)]
            s = s.parent
        return []


def _attribute_values(cls: ast.ClassDef, attr: str) -> List[ast.AST]:
    """Values assigned to ``attr`` in the body of cls or to ``self.attr`` in
    its methods."""
    out = []
    for stmt in cls.body:
        for t, v in _assignments(stmt):
            if isinstance(t, ast.Name) and t.id == attr and v is not None:
                out.append(v)
    for n in _walk(cls):
        for t, v in _assignments(n):
            if isinstance(t, ast.Attribute) and t.attr == attr and v is not None \
                    and isinstance(t.value, ast.Name) and t.value.id == "self":
                out.append(v)
    return out


class Finder:
    """Collects the knobs of one module."""

    def __init__(self, source: bytes, tree: ast.Module) -> None:
        self.lines = _Lines(source)
        self.tree = tree
        self.knobs: List[Dict[str, Any]] = []
        self.seen: Dict[int, Dict[str, Any]] = {}  # offset -> knob
        self.kernels: Dict[str, _Kernel] = {}
        for n in _walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    any(d == "jit" for d, _ in _decorators(n)):
                self.kernels[n.name] = _Kernel(n)
        self.module = _Scope(tree, None)

    def run(self) -> List[Dict[str, Any]]:
        for stmt in self.tree.body:
            self._visit(stmt, self.module, None)
        self._configs()
        self.knobs.sort(key=lambda k: (k["offset"], k["end"], k["name"]))
        return self.knobs

    # -- knob records -----------------------------------------------------
    def _add(self, node: Optional[ast.AST], name: str, param: str, kind: str, site: str,
             kernel: str = "", linked: Sequence[ast.AST] = (), note: str = "") -> None:
        value = _int_literal(node)
        if node is None or value is None:
            return
        minimum = value if note else 0
        span = _span(self.lines, node)
        old = self.seen.get(span["offset"])
        if old is not None:
            # One literal feeding several launches: one knob, the tighter bound.
            if minimum > old["min"]:
                old["min"], old["note"] = minimum, note
            return
        knob: Dict[str, Any] = {"name": name, "param": param, "kernel": kernel,
                                "kind": kind, "value": value, "site": site}
        knob.update(span)
        knob.update({"linked": [_span(self.lines, n) for n in linked],
                     "insert": "", "min": minimum, "note": note})
        self.seen[span["offset"]] = knob
        self.knobs.append(knob)

    def _add_implicit(self, call: ast.Call, param: str, kernel: _Kernel) -> None:
        last = max(list(call.args) + [k.value for k in call.keywords],
                   key=lambda n: (n.end_lineno, n.end_col_offset))
        off = self.lines.offset(last.end_lineno, last.end_col_offset)
        value = DEFAULT_WARPS if param == "num_warps" else DEFAULT_STAGES
        self.knobs.append({
            "name": param, "param": param, "kernel": kernel.name, "kind": kind_of(param),
            "value": value, "site": "implicit",
            "line": last.end_lineno, "col": last.end_col_offset + 1,
            "end_line": last.end_lineno, "end_col": last.end_col_offset + 1,
            "offset": off, "end": off, "linked": [], "insert": ", %s=" % param,
            "min": 0, "note": "not passed at the launch; Triton's default is %d" % value})

    # -- traversal --------------------------------------------------------
    def _visit(self, node: ast.AST, scope: _Scope, cls: Optional[ast.ClassDef]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outer = node.decorator_list + node.args.defaults + \
                [d for d in node.args.kw_defaults if d is not None]
            for sub in outer:
                self._visit(sub, scope, cls)
            inner = _Scope(node, scope)
            for stmt in node.body:
                self._visit(stmt, inner, cls)
            return
        if isinstance(node, ast.ClassDef):
            # Methods do not see the class body's names: same scope.
            for stmt in node.decorator_list + node.body:
                self._visit(stmt, scope, node)
            return
        if isinstance(node, ast.Call):
            self._launch(node, scope, cls)
        for child in _children(node):
            self._visit(child, scope, cls)

    def _launch(self, call: ast.Call, scope: _Scope, cls: Optional[ast.ClassDef]) -> None:
        if not isinstance(call.func, ast.Subscript):
            return
        kernel = self.kernels.get(_dotted(call.func.value).split(".")[-1])
        kname = kernel.name if kernel is not None else ""
        grid = call.func.slice
        if isinstance(grid, getattr(ast, "Index", ())):  # Python 3.8
            grid = grid.value  # type: ignore[attr-defined]
        bound: List[Tuple[str, ast.AST]] = []
        if kernel is not None:
            for i, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred) or i >= len(kernel.params):
                    break
                bound.append((kernel.params[i], arg))
        bound.extend((k.arg, k.value) for k in call.keywords if k.arg is not None)
        for param, value in bound:
            kind = kind_of(param)
            if kind is None:
                continue
            note = ""
            if kernel is not None and kind == BLOCK and param in kernel.covers:
                note = ("covers a whole reduction in %s (tl.arange(0, %s) without tiling): "
                        "only larger values" % (kname, param))
            lit = _int_literal(value)
            if lit is not None:
                linked = self._grid_literals(grid, lit, scope) if kind == BLOCK else []
                self._add(value, param, param, kind, "launch", kname, linked, note)
            else:
                self._feed(value, param, kind, kname, note, scope, cls, 0)
        passed = {p for p, _ in bound}
        if kernel is not None and kernel.plain_jit and (call.args or call.keywords) \
                and not any(k.arg is None for k in call.keywords) \
                and not any(isinstance(a, ast.Starred) for a in call.args):
            if "num_warps" not in passed:
                self._add_implicit(call, "num_warps", kernel)
            if "num_stages" not in passed and kernel.has_loop:
                self._add_implicit(call, "num_stages", kernel)

    def _feed(self, value: ast.AST, param: str, kind: str, kernel: str, note: str,
              scope: _Scope, cls: Optional[ast.ClassDef], depth: int) -> None:
        """Follow a name (or self attribute) passed to a launch to the
        literals bound to it."""
        if depth > 4:
            return
        if isinstance(value, ast.Name):
            for val, how, where in scope.resolve(value.id):
                if _int_literal(val) is not None:
                    self._add(val, value.id, param, kind, how, kernel, (), note)
                elif val is not None:
                    self._feed(val, param, kind, kernel, note, where, cls, depth + 1)
        elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
                and value.value.id == "self" and cls is not None:
            for val in _attribute_values(cls, value.attr):
                self._add(val, "self." + value.attr, param, kind, "attribute", kernel, (), note)

    def _grid_literals(self, grid: ast.AST, value: int, scope: _Scope) -> List[ast.AST]:
        """Literals equal to a launch's block literal in its grid: the same
        number, which must change with it."""
        exprs: List[Optional[ast.AST]] = [grid]
        if isinstance(grid, ast.Name):
            exprs = [v for v, _, _ in scope.resolve(grid.id)]
        return [n for e in exprs if e is not None for n in _walk(e) if _int_literal(n) == value]

    def autotune_lists(self) -> List[Dict[str, Any]]:
        """The literal configs lists of @triton.autotune: each list's span
        and the spans of its triton.Config entries, so that a variant can
        pin one config (the list rewritten to hold it alone)."""
        out: List[Dict[str, Any]] = []
        for k in sorted(self.kernels.values(), key=lambda k: k.name):
            for lst in self._autotune_configs(k):
                if not isinstance(lst, ast.List):
                    continue
                entries = [n for n in lst.elts if isinstance(n, ast.Call)
                           and _dotted(n.func).split(".")[-1] == "Config"]
                if len(entries) != len(lst.elts) or len(entries) < 2:
                    continue
                out.append({"kernel": k.name, "list": _span(self.lines, lst),
                            "configs": [_span(self.lines, n) for n in entries]})
        return out

    def _autotune_configs(self, k: Any) -> List[Optional[ast.AST]]:
        """The expressions a kernel's @triton.autotune takes its configs
        from (its configs= keyword or first argument), a name resolved to
        the values it is assigned; none without @triton.autotune(...)."""
        if not isinstance(k.autotune, ast.Call):
            return []
        exprs = [kw.value for kw in k.autotune.keywords if kw.arg == "configs"]
        exprs += k.autotune.args[:1]
        out: List[Optional[ast.AST]] = []
        for e in exprs:
            if isinstance(e, ast.Name):
                out += [v for v, _, _ in self.module.resolve(e.id)]
            else:
                out.append(e)
        return out

    def _configs(self) -> None:
        """triton.Config entries, tied to the autotuned kernel when found."""
        owner: Dict[int, str] = {}
        for k in self.kernels.values():
            for lst in self._autotune_configs(k):
                for n in (_walk(lst) if lst is not None else ()):
                    owner[id(n)] = k.name
        index: Dict[str, int] = {}
        for n in _walk(self.tree):
            if not (isinstance(n, ast.Call) and _dotted(n.func).split(".")[-1] == "Config"):
                continue
            kname = owner.get(id(n), "")
            i = index.get(kname, 0)
            index[kname] = i + 1
            kernel = self.kernels.get(kname)
            prefix = "%s.configs[%d]." % (kname, i) if kname else "configs[%d]." % i
            meta = n.args[0] if n.args else next(
                (k.value for k in n.keywords if k.arg == "kwargs"), None)
            if isinstance(meta, ast.Dict):
                for key, val in zip(meta.keys, meta.values):
                    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                        continue
                    kind = kind_of(key.value)
                    if kind is None:
                        continue
                    note = ""
                    if kernel is not None and kind == BLOCK and key.value in kernel.covers:
                        note = "covers a whole reduction in %s: only larger values" % kname
                    self._add(val, prefix + key.value, key.value, kind, "config", kname, (), note)
            for kw in n.keywords:
                if kw.arg in ("num_warps", "num_stages"):
                    self._add(kw.value, prefix + kw.arg, kw.arg, kind_of(kw.arg), "config", kname)


def find(source: bytes, filename: str = "<source>") -> Dict[str, Any]:
    """Parse source and return the report that main prints."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        return {"error": "syntax error: %s" % e.msg, "line": e.lineno, "knobs": []}
    except ValueError as e:
        return {"error": "cannot parse: %s" % e, "line": None, "knobs": []}
    f = Finder(source, tree)
    return {"error": None, "line": None, "knobs": f.run(), "autotune": f.autotune_lists()}


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: knobs.py FILE (\"-\" reads stdin)\n")
        return 2
    try:
        if argv[0] == "-":
            source = sys.stdin.buffer.read()
        else:
            with open(argv[0], "rb") as f:
                source = f.read()
    except OSError as e:
        sys.stdout.write(json.dumps({"error": "cannot read: %s" % e, "line": None, "knobs": []}) + "\n")
        return 0
    sys.stdout.write(json.dumps(find(source, argv[0])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
