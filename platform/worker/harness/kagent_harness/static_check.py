"""Static check of a candidate's source on the Python AST (never by regex).

What runs in the harness process is checked: module-level (import-time) code,
``kernel_function`` and every method of ``ModelNew``, and, transitively, every
function and class of the same file that checked code refers to. The bodies of
``@triton.jit`` functions are Triton, not Python, and are not checked against
the PyTorch ban list.

The ban list is data (the tables below), so it is easy to read and extend.
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

# --- Ban tables ---------------------------------------------------------------

# Modules a kernel file may not import or use, with the reason shown to the LLM.
BANNED_MODULES: Dict[str, str] = {
    "threading": "threads can run work outside the timed call",
    "_thread": "threads can run work outside the timed call",
    "multiprocessing": "other processes can run work outside the timed call",
    "concurrent": "executors can run work outside the timed call",
    "asyncio": "event loops can run work outside the timed call",
    "ctypes": "ctypes reaches into the process's memory",
    "_ctypes": "ctypes reaches into the process's memory",
    "cffi": "cffi reaches into the process's memory",
    "mmap": "raw memory mappings are not allowed",
    "subprocess": "subprocesses are not allowed",
    "pty": "subprocesses are not allowed",
    "importlib": "dynamic imports hide what is called",
    "imp": "dynamic imports hide what is called",
    "pkgutil": "dynamic imports hide what is called",
    "zipimport": "dynamic imports hide what is called",
    "runpy": "running other code is not allowed",
    "code": "running other code is not allowed",
    "codeop": "running other code is not allowed",
    "inspect": "introspection of the caller is not allowed",
    "gc": "walking the garbage collector's objects is not allowed",
    "builtins": "changing builtins is not allowed",
    "__builtin__": "changing builtins is not allowed",
    "types": "building functions or modules at run time is not allowed",
    "signal": "signal handlers can interrupt the harness",
    "resource": "changing process limits is not allowed",
    "atexit": "exit handlers run outside the kernel call",
    "socket": "network access is not allowed",
    "io": "raw file descriptors are not allowed",
    "fcntl": "raw file descriptors are not allowed",
    "select": "raw file descriptors are not allowed",
    "pickle": "loading serialized code is not allowed",
    "marshal": "loading serialized code is not allowed",
    "dill": "loading serialized code is not allowed",
    "cloudpickle": "loading serialized code is not allowed",
    "shelve": "loading serialized code is not allowed",
    "pdb": "debuggers are not allowed",
    "trace": "tracing the harness is not allowed",
    "tracemalloc": "tracing the harness is not allowed",
    "numpy": "the kernel must compute in Triton, not another array library",
    "cupy": "the kernel must compute in Triton, not another array library",
    "cupyx": "the kernel must compute in Triton, not another array library",
    "scipy": "the kernel must compute in Triton, not another array library",
    "jax": "the kernel must compute in Triton, not another array library",
    "jaxlib": "the kernel must compute in Triton, not another array library",
    "tensorflow": "the kernel must compute in Triton, not another array library",
    "numba": "the kernel must compute in Triton, not another compiler",
    "pycuda": "the kernel must compute in Triton, not another compiler",
    "cuda": "the kernel must compute in Triton, not CUDA bindings",
    "tilelang": "the kernel must compute in Triton, not another DSL",
    "cutlass": "the kernel must compute in Triton, not another library",
    "torch.utils.cpp_extension": "the kernel must compute in Triton, not a C++/CUDA extension",
    "kagent_harness": "the harness is off limits",
}

# Dotted names (and everything under them) that may not be referenced.
BANNED_QUALIFIED: Dict[str, str] = {
    "torch.nn.functional": "is a PyTorch functional op; compute it in a Triton kernel",
    "torch.ops": "is an ATen/torch.ops call; compute it in a Triton kernel",
    "torch.compile": "hands the work to torch.compile",
    "torch.jit": "hands the work to TorchScript",
    "torch.export": "hands the work to torch.export",
    "torch.linalg": "is a PyTorch library op; compute it in a Triton kernel",
    "torch.fft": "is a PyTorch library op; compute it in a Triton kernel",
    "torch.sparse": "is a PyTorch library op; compute it in a Triton kernel",
    "torch.nested": "is a PyTorch library op; compute it in a Triton kernel",
    "torch.distributed": "is not allowed in a kernel",
    "torch.multiprocessing": "other processes can run work outside the timed call",
    "torch.library": "registering or overriding operators is not allowed",
    "torch.overrides": "overriding torch functions is not allowed",
    "torch.hub": "downloading code is not allowed",
    "torch.cuda.Stream": "work on another stream escapes the timed stream",
    "torch.cuda.stream": "work on another stream escapes the timed stream",
    "torch.cuda.streams": "work on another stream escapes the timed stream",
    "torch.cuda.ExternalStream": "work on another stream escapes the timed stream",
    "torch.cuda.set_stream": "work on another stream escapes the timed stream",
    "torch.Stream": "work on another stream escapes the timed stream",
    "torch.cuda.graph": "CUDA graph replay is not allowed in a kernel",
    "torch.cuda.graphs": "CUDA graph replay is not allowed in a kernel",
    "torch.cuda.CUDAGraph": "CUDA graph replay is not allowed in a kernel",
    "torch.cuda.make_graphed_callables": "CUDA graph replay is not allowed in a kernel",
    "torch.cuda.manual_seed": "changes global RNG state",
    "torch.cuda.manual_seed_all": "changes global RNG state",
    "torch.cuda.set_rng_state": "changes global RNG state",
    "torch.manual_seed": "changes global RNG state",
    "torch.seed": "changes global RNG state",
    "torch.random": "changes global RNG state",
    "torch.use_deterministic_algorithms": "changes global torch state",
    "sys.argv": "reads the command line (a kernel must not tell the harness's phases apart)",
    "sys.orig_argv": "reads the command line (a kernel must not tell the harness's phases apart)",
    "sys._getframe": "inspects the caller",
    "sys.modules": "touches sys.modules",
    "sys.settrace": "installs a tracer",
    "sys.setprofile": "installs a profiler hook",
    "sys.addaudithook": "installs an audit hook",
    "sys.meta_path": "changes the import system",
    "sys.path_hooks": "changes the import system",
    "os.system": "runs a subprocess",
    "os.popen": "runs a subprocess",
    "os.fork": "forks the worker",
    "os.forkpty": "forks the worker",
    "os.posix_spawn": "runs a subprocess",
    "os.posix_spawnp": "runs a subprocess",
    "os.kill": "sends signals",
    "os.killpg": "sends signals",
    "os.putenv": "writes the environment",
    "os.unsetenv": "writes the environment",
    "os.chdir": "changes the worker's directory",
    "os.open": "opens raw file descriptors",
    "os.fdopen": "opens raw file descriptors",
    "os.dup": "duplicates file descriptors",
    "os.dup2": "duplicates file descriptors",
    "os.write": "writes to raw file descriptors",
    "os.writev": "writes to raw file descriptors",
    "os.pwrite": "writes to raw file descriptors",
    "os.sendfile": "writes to raw file descriptors",
    "os.read": "reads raw file descriptors",
    "os.pipe": "opens raw file descriptors",
    "functools.lru_cache": "memoizes results across calls",
    "functools.cache": "memoizes results across calls",
    "functools.cached_property": "memoizes results across calls",
    "operator.matmul": "is a matmul; compute it in a Triton kernel",
    "operator.imatmul": "is a matmul; compute it in a Triton kernel",
    "operator.attrgetter": "is a dynamic lookup that hides what is called",
    "operator.methodcaller": "is a dynamic lookup that hides what is called",
}

# Prefixes matched on the raw string (not a dotted boundary).
BANNED_STRING_PREFIXES: Dict[str, str] = {
    "torch.set_": "changes global torch state",
    "os.exec": "replaces the worker process",
    "os.spawn": "runs a subprocess",
}

# Methods of os.environ that write it.
ENVIRON_WRITERS: Set[str] = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}

# Ops that do the work of the kernel: banned under any torch namespace
# (torch.X, torch.Tensor.X, torch.special.X ...) and, for the METHOD subset, as
# tensor methods (x.sum()).
LIBRARY_OPS: Set[str] = {
    # matrix products
    "matmul", "mm", "bmm", "baddbmm", "addbmm", "addmm", "addmv", "addr", "mv", "dot", "vdot",
    "inner", "outer", "ger", "einsum", "tensordot", "kron", "chain_matmul", "linear", "bilinear",
    "__matmul__", "__rmatmul__", "__imatmul__",
    # convolutions
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "conv_tbc", "_convolution",
    # norms, softmax
    "layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm", "local_response_norm",
    "norm", "frobenius_norm", "nuclear_norm", "renorm", "normalize", "softmax", "log_softmax",
    "softmin", "logsumexp",
    # reductions and scans
    "sum", "nansum", "mean", "nanmean", "amax", "amin", "max", "min", "aminmax", "argmax", "argmin",
    "prod", "var", "std", "var_mean", "std_mean", "cumsum", "cumprod", "cummax", "cummin",
    "logcumsumexp", "median", "nanmedian", "quantile", "nanquantile", "topk", "sort", "argsort",
    "msort", "kthvalue", "count_nonzero", "dist", "cdist", "pdist", "cosine_similarity",
    "pairwise_distance", "histc", "histogram", "bincount", "scatter_reduce", "index_reduce",
    "segment_reduce", "trapz", "trapezoid", "cumulative_trapezoid",
    # pooling, attention, recurrent, losses, resampling
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "embedding", "embedding_bag", "scaled_dot_product_attention", "lstm", "gru", "rnn_tanh",
    "rnn_relu", "ctc_loss", "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "hinge_embedding_loss",
    "smooth_l1_loss", "huber_loss", "margin_ranking_loss", "triplet_margin_loss", "cosine_embedding_loss",
    "dropout", "alpha_dropout", "feature_dropout", "grid_sampler", "grid_sample", "interpolate",
    "upsample", "upsample_nearest", "upsample_bilinear", "affine_grid", "stft", "istft",
    # linear algebra
    "svd", "qr", "eig", "inverse", "det", "logdet", "slogdet", "cholesky", "solve", "lstsq",
    "pinverse", "matrix_power", "matrix_exp", "triangular_solve", "lu",
}

# Tensor-method forms that are banned (x.sum(), x @ y via __matmul__ ...). A
# subset of LIBRARY_OPS: names that are common words for other things (mode,
# trace, linear, dropout ...) are only banned under torch namespaces.
LIBRARY_METHODS: Set[str] = {
    "matmul", "mm", "bmm", "baddbmm", "addbmm", "addmm", "addmv", "addr", "mv", "dot", "vdot",
    "inner", "outer", "ger", "kron", "__matmul__", "__rmatmul__", "__imatmul__", "norm", "renorm",
    "softmax", "log_softmax", "logsumexp", "sum", "nansum", "mean", "nanmean", "amax", "amin", "max",
    "min", "aminmax", "argmax", "argmin", "prod", "var", "std", "cumsum", "cumprod", "cummax",
    "cummin", "logcumsumexp", "median", "nanmedian", "quantile", "nanquantile", "topk", "sort",
    "argsort", "msort", "kthvalue", "count_nonzero", "histc", "bincount", "scatter_reduce",
    "index_reduce", "cholesky", "inverse", "det", "logdet", "slogdet", "pinverse", "matrix_power",
    "matrix_exp", "svd", "qr", "lu", "stft", "istft",
}

# Elementwise math, banned only when a Triton kernel is required (on a GPU the
# math belongs in Triton; on the cpu platform the "kernel" is written with them).
STRICT_OPS: Set[str] = {
    "relu", "relu6", "sigmoid", "tanh", "gelu", "silu", "mish", "hardtanh", "hardswish",
    "hardsigmoid", "hardshrink", "softshrink", "tanhshrink", "elu", "selu", "celu", "leaky_relu",
    "prelu", "rrelu", "glu", "softplus", "softsign", "logsigmoid", "threshold", "exp", "exp2",
    "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "arctan2", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv",
    "pow", "float_power", "square", "reciprocal", "where", "clamp", "clip", "clamp_min",
    "clamp_max", "maximum", "minimum", "fmax", "fmin", "lerp", "addcmul", "addcdiv", "sign", "sgn",
    "floor", "ceil", "round", "trunc", "frac", "fmod", "remainder", "abs", "absolute", "neg",
    "negative", "logit", "xlogy", "sinc", "hypot", "copysign", "nan_to_num", "logaddexp",
    "logaddexp2", "special",
}

# Builtins that hide what is called or reach outside the kernel.
BANNED_BUILTINS: Dict[str, str] = {
    "eval": "evaluates code from a string",
    "exec": "executes code from a string",
    "compile": "compiles code from a string",
    "__import__": "is a dynamic import",
    "globals": "reaches module globals dynamically",
    "locals": "reaches local variables dynamically",
    "vars": "reaches attributes dynamically",
    "open": "opens files or raw file descriptors",
    "breakpoint": "starts a debugger",
    "__builtins__": "touches builtins",
}

# Attribute names that reach into interpreter internals.
BANNED_ATTRIBUTES: Dict[str, str] = {
    "__dict__": "reaches attributes dynamically",
    "__globals__": "reaches another function's globals",
    "__code__": "rewrites code objects",
    "__builtins__": "touches builtins",
    "__subclasses__": "walks the class hierarchy",
    "__bases__": "walks the class hierarchy",
    "__mro__": "walks the class hierarchy",
    "__closure__": "reaches another function's closure",
    "__getattribute__": "is a dynamic lookup",
    "__setattr__": "is a dynamic attribute write",
    "__delattr__": "is a dynamic attribute write",
    "__import__": "is a dynamic import",
    "__loader__": "touches the import system",
    "__spec__": "touches the import system",
    "__torch_function__": "overrides torch functions",
    "__torch_dispatch__": "overrides torch dispatch",
    "f_locals": "inspects stack frames",
    "f_globals": "inspects stack frames",
    "f_back": "inspects stack frames",
    "f_code": "inspects stack frames",
    "f_builtins": "inspects stack frames",
    "tb_frame": "inspects stack frames",
    "gi_frame": "inspects stack frames",
    "cr_frame": "inspects stack frames",
    "ag_frame": "inspects stack frames",
}

# Decorators marking a Triton function (its body is Triton, not Python).
TRITON_DECORATORS: Set[str] = {
    "triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit", "triton.autotune",
    "triton.runtime.autotune", "triton.runtime.autotuner.autotune", "triton.heuristics",
    "triton.runtime.heuristics", "triton.runtime.autotuner.heuristics", "triton.language.core.extern",
}
TRITON_JIT: Set[str] = {"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"}

# Calls whose result's attributes are plain numbers, not tensor methods (torch.finfo(t).max).
INFO_CALLS: Set[str] = {"torch.finfo", "torch.iinfo"}

# Names of the reference problem's module (importing it leaks the reference).
PROBLEM_MODULES: Set[str] = {"problem", "reference"}

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
