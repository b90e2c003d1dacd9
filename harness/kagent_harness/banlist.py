"""The ban list of the static check, as data.

Each table maps a name to the reason shown to the LLM. To ban something new,
add a row; ``static_check`` does the matching (see its docstring for the rules:
dotted names are resolved through imports and aliases, tensor-method forms are
matched by attribute name, Triton function bodies are exempt).
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

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

# The only top-level modules a kernel file may import. Anything else (pydoc,
# unittest.mock, string, traceback, weakref, ...) can reach objects by name
# from a string, which no name-based check can follow. BANNED_MODULES and
# BANNED_QUALIFIED still apply inside these.
ALLOWED_IMPORTS: Set[str] = {
    "torch", "triton", "__future__", "math", "cmath", "typing", "typing_extensions", "functools", "itertools",
    "operator", "dataclasses", "collections", "enum", "abc", "numbers", "warnings", "contextlib", "os", "sys",
    "random", "time", "re", "copy", "heapq", "bisect", "statistics", "fractions", "decimal", "json",
    "textwrap",
    # Restricted to crashing the worker (MODULE_ATTRIBUTES), which is survived.
    "faulthandler",
}

# Allowed modules whose attributes are an allow-list: everything else in them
# (os.remove, sys.modules, warnings.catch_warnings, faulthandler.enable(file=fd)
# ...) is banned. Keys are canonical module names.
MODULE_ATTRIBUTES: Dict[str, Set[str]] = {
    "os": {"environ", "getenv", "path", "cpu_count", "getpid", "sep", "linesep", "name", "_exit"},
    "sys": {"stdout", "stderr", "stdin", "exit", "version_info", "version", "platform", "maxsize", "float_info",
            "byteorder", "getrecursionlimit"},
    "faulthandler": {"_sigsegv", "_sigabrt", "_sigfpe", "_read_null"},
    "warnings": {"warn"},
    "time": {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "sleep"},
}

# Canonical names of modules that are spelled otherwise in kernels (os.path is posixpath).
MODULE_SPELLINGS: Dict[str, str] = {"posixpath": "os.path", "ntpath": "os.path", "genericpath": "os.path"}

# Builtins a kernel may use. Any other free name (getattr, type, vars, open,
# __import__, __builtins__, help, memoryview, id ...) is banned: builtins that are
# not here reach objects dynamically, open files or tell calls apart.
ALLOWED_BUILTINS: Set[str] = {
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "complex",
    "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "int", "isinstance",
    "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct", "ord", "pow", "print",
    "property", "range", "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str", "sum",
    "super", "tuple", "zip", "True", "False", "None", "NotImplemented", "Ellipsis", "__name__",
    "BaseException", "Exception", "ArithmeticError", "AssertionError", "AttributeError", "IndexError",
    "KeyError", "LookupError", "MemoryError", "NotImplementedError", "OverflowError", "RecursionError",
    "RuntimeError", "StopIteration", "TypeError", "ValueError", "ZeroDivisionError", "ImportError",
    "ModuleNotFoundError", "NameError", "OSError", "UserWarning", "RuntimeWarning", "DeprecationWarning",
    "Warning", "SystemExit", "KeyboardInterrupt",
}

# Builtins that take an attribute name: with a computed name they hide what is
# reached; with a literal one the name is checked like `x.name`.
ATTRIBUTE_BUILTINS: Set[str] = {"getattr", "setattr", "delattr", "hasattr"}

# Dunder attributes a kernel may read (every other one reaches interpreter
# internals: __dict__, __class__, __globals__, __mro__, __subclasses__ ...).
# `__init__` only on super() or a class (super().__init__(), nn.Module.__init__(self)):
# on an object it re-runs a constructor (a file object's on another descriptor).
ALLOWED_DUNDERS: Set[str] = {"__init__", "__name__"}

# Attribute names banned on any object: nn.Module methods that hand out its
# sub-layers (which a kernel could then call), and runtime hooks that load
# foreign GPU code or switch streams.
BANNED_METHOD_NAMES: Dict[str, str] = {
    "modules": "hands out torch.nn layers; read the parameters you need (self.layer.weight)",
    "children": "hands out torch.nn layers; read the parameters you need (self.layer.weight)",
    "named_modules": "hands out torch.nn layers; read the parameters you need (self.layer.weight)",
    "named_children": "hands out torch.nn layers; read the parameters you need (self.layer.weight)",
    "get_submodule": "hands out torch.nn layers; read the parameters you need (self.layer.weight)",
    "add_module": "registers torch.nn layers by name; assign self.name = ... instead",
    "register_module": "registers torch.nn layers by name; assign self.name = ... instead",
    "apply": "runs a function over torch.nn layers",
    "obj": "(AttributeError.obj) reaches the object a lookup failed on",
    "load_binary": "loads GPU code that is not Triton",
    "set_current_stream": "work on another stream escapes the timed stream",
    "set_active": "replaces Triton's driver",
}

# Methods of a torch.nn layer a kernel may call: they return tensors.
LAYER_METHODS: Set[str] = {"parameters", "named_parameters", "buffers", "named_buffers"}

# torch.nn classes that hold parameters or layers but compute nothing themselves.
NN_CONTAINERS: Set[str] = {
    "Module", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "ParameterDict", "Buffer",
    "UninitializedParameter", "UninitializedBuffer",
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
    "operator.matmul": "is a matmul; compute it in a Triton kernel",
    "operator.imatmul": "is a matmul; compute it in a Triton kernel",
    "operator.attrgetter": "is a dynamic lookup that hides what is called",
    "operator.methodcaller": "is a dynamic lookup that hides what is called",
    "typing.get_type_hints": "evaluates annotations as code",
    "typing.ForwardRef": "evaluates annotations as code",
    "typing.evaluate_forward_ref": "evaluates annotations as code",
    "typing_extensions.get_type_hints": "evaluates annotations as code",
    "typing_extensions.ForwardRef": "evaluates annotations as code",
    "typing_extensions.evaluate_forward_ref": "evaluates annotations as code",
    "functools.singledispatch": "dispatches on types the kernel does not name",
    "torch.get_device_module": "hands out a module by name",
    "torch.load": "loads serialized objects",
    "torch.save": "writes files",
    "torch.utils": "is not allowed in a kernel",
    "torch.func": "is not allowed in a kernel",
    "torch.fx": "is not allowed in a kernel",
    "torch.package": "loads code",
    "torch.serialization": "loads serialized objects",
    "torch.onnx": "is not allowed in a kernel",
    "torch.profiler": "is not allowed in a kernel",
    "torch.autograd.profiler": "is not allowed in a kernel",
    "torch.autograd.graph": "installs autograd hooks",
    "torch.ao": "is not allowed in a kernel",
    "torch.quantization": "is not allowed in a kernel",
    "torch.classes": "loads custom C++ classes",
    "torch.cuda.jiterator": "compiles CUDA code that is not Triton",
    "torch.cuda.memory": "is not allowed in a kernel",
    "torch.testing": "is the harness's comparison; a kernel does not call it",
    "triton.compile": "compiles code that is not a @triton.jit function",
    "triton.compiler": "compiles code that is not a @triton.jit function",
    "triton.runtime.build": "compiles and loads C code",
    "triton.backends": "reaches Triton's driver internals",
    "triton.tools": "is not allowed in a kernel",
    "triton.testing": "is the harness's timer; a kernel does not call it",
    "triton.runtime.cache": "reaches Triton's cache",
}

# Prefixes matched on the raw string (not a dotted boundary).
BANNED_STRING_PREFIXES: Dict[str, str] = {
    "torch.set_": "changes global torch state",
    "torch.cuda.set_": "changes global CUDA state",
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
    "segment_reduce", "trapz", "trapezoid", "cumulative_trapezoid", "sum_to_size", "index_add",
    "index_add_", "scatter_add", "scatter_add_", "_softmax", "_log_softmax", "native_layer_norm",
    "native_batch_norm", "native_group_norm", "native_norm", "_batch_norm_impl_index", "_fused_rms_norm",
    "_weight_norm", "_sparse_mm", "_addmm_activation", "_scaled_mm",
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
    "matrix_exp", "svd", "qr", "lu", "stft", "istft", "sum_to_size", "index_add", "index_add_",
    "scatter_add", "scatter_add_",
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
    "getattr": "is a dynamic lookup that hides what is called",
    "setattr": "is a dynamic attribute write",
    "delattr": "is a dynamic attribute write",
    "hasattr": "is a dynamic lookup",
    "type": "reaches an object's class and its internals",
    "dir": "lists names for dynamic lookups",
    "id": "tells objects apart (a kernel must behave the same whenever it is called)",
    "help": "imports modules by name",
    "memoryview": "reaches raw memory",
    "input": "reads the worker's input",
    "exit": "exits the worker",
    "quit": "exits the worker",
    "__build_class__": "builds classes dynamically",
    "__loader__": "touches the import system",
    "__spec__": "touches the import system",
    "__file__": "reaches the kernel's files",
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


# The ban list as the LLM reads it (prompts/rules.go renders it into the Triton
# rules of every prompt; the prompts package embeds the export of this table,
# prompts/bans.json, which tests/test_static_check.py keeps equal to it). Each
# rule: what is banned, why, and the table names it speaks for: a name, a
# prefix of dotted names ("torch.set_" covers torch.set_grad_enabled), a
# pattern ending in * ("f_*"), or "module:*" (any module outside
# ALLOWED_IMPORTS). Every name of the tables above is covered by a rule.
PROMPT_RULES: List[Tuple[str, str, Tuple[str, ...]]] = [
    ('imports other than torch, triton and these standard modules: abc, bisect, cmath, collections, contextlib, copy, dataclasses, decimal, enum, faulthandler, fractions, functools, heapq, itertools, json, math, numbers, operator, os, random, re, statistics, sys, textwrap, time, typing, typing_extensions, warnings; and from os, sys, time and warnings anything but os.environ (read only), os.getenv, os.path, os.cpu_count, sys.stdout/stderr/exit/version_info/platform/maxsize, time.perf_counter/time/monotonic/sleep, warnings.warn',
     'other modules (pydoc, unittest.mock, string, traceback, logging, ...) reach objects by name or open files',
     ('module:*',)),
    ('using a module, a library function or a library class as a value: passing it, storing it in a list, dict or attribute, returning it, binding it with =, for, with or := (T = torch, f = torch.empty, [F]); use modules only as torch.name and call library functions where they are needed',
     'names the check cannot follow would hide what is called',
     ()),
    ('the reference Model, or importing the problem module',
     'it would run the reference',
     ()),
    ('torch.nn.functional (F.*), torch.ops.* (torch.ops.aten.*), torch.linalg / torch.fft / torch.sparse / torch.func / torch.utils',
     'PyTorch would compute the result',
     ('torch.nn.functional', 'torch.ops', 'torch.linalg', 'torch.fft', 'torch.sparse', 'torch.func', 'torch.utils')),
    ('calling torch.nn layers in any way (self.fc(x), self.layers[i](x), for layer in self.layers: layer(x), .forward, .children(), .modules(), .apply), building them anywhere but as model attributes (self.fc = nn.Linear(...)), or subclassing them; read their parameters (self.fc.weight) and compute in Triton',
     'PyTorch would compute the result',
     ('add_module', 'apply', 'children', 'get_submodule', 'modules', 'named_children', 'named_modules', 'register_module')),
    ('torch matrix products: matmul, mm, bmm, addmm, baddbmm, mv, dot, einsum, tensordot, linear, the @ operator on tensors',
     'cuBLAS would compute the result',
     ('operator.matmul', 'operator.imatmul')),
    ('torch convolutions, pooling, attention, embedding, dropout, interpolation and loss functions',
     'PyTorch would compute the result',
     ()),
    ('torch reductions, scans and sorts, as functions or tensor methods: sum, mean, max, min, amax, amin, prod, var, std, norm, cumsum, logsumexp, argmax, topk, sort, sum_to_size, index_add, scatter_add, ...',
     'PyTorch would compute the result',
     ()),
    ('torch softmax, log_softmax and normalizations (layer_norm, batch_norm, group_norm, instance_norm, rms_norm)',
     'PyTorch would compute the result',
     ()),
    ('torch elementwise math outside Triton on a GPU: exp, log, sqrt, rsqrt, pow, abs, where, clamp, maximum, relu, sigmoid, tanh, gelu, silu, ...',
     'the math belongs in the Triton kernel',
     ()),
    ('other array libraries and compilers: numpy, cupy, scipy, jax, numba, pycuda, cuda bindings, cutlass, torch.utils.cpp_extension',
     'the kernel must compute in Triton',
     ()),
    ('torch.compile, torch.jit, torch.export',
     'another compiler would produce the kernel',
     ('torch.compile', 'torch.jit', 'torch.export')),
    ("torch's and Triton's internals and services: torch.nested, torch.ao, torch.quantization, torch.library, torch.classes, torch.overrides, torch.fx, torch.distributed, torch.multiprocessing, torch.hub, torch.onnx, torch.package, torch.testing, torch.profiler and torch.autograd's profiler and graph hooks, torch.load, torch.save, torch.serialization, torch.get_device_module, torch.cuda.memory, torch.cuda.jiterator; triton.compile, triton.compiler, triton.backends, triton.runtime's build and cache, triton.testing, triton.tools, a driver's load_binary or set_active",
     'they compute, compile or load code outside the kernel, or reach into the harness',
     ('torch.nested', 'torch.ao', 'torch.quantization', 'torch.library', 'torch.classes', 'torch.overrides', 'torch.fx', 'torch.distributed', 'torch.multiprocessing', 'torch.hub', 'torch.onnx', 'torch.package', 'torch.testing', 'torch.profiler', 'torch.autograd.profiler', 'torch.autograd.graph', 'torch.load', 'torch.save', 'torch.serialization', 'torch.get_device_module', 'torch.cuda.memory', 'torch.cuda.jiterator', 'triton.compile', 'triton.compiler', 'triton.backends', 'triton.runtime.build', 'triton.runtime.cache', 'triton.testing', 'triton.tools', 'load_binary', 'set_active')),
    ('CUDA/HIP streams and graphs (torch.cuda.Stream, torch.cuda.stream, torch.cuda.graph, CUDAGraph)',
     'work would escape the timed stream',
     ('torch.Stream', 'torch.cuda.Stream', 'torch.cuda.stream', 'torch.cuda.streams', 'torch.cuda.ExternalStream', 'torch.cuda.set_stream', 'set_current_stream', 'torch.cuda.graph', 'torch.cuda.graphs', 'torch.cuda.CUDAGraph', 'torch.cuda.make_graphed_callables')),
    ('threads, processes and event loops (threading, multiprocessing, concurrent.futures, asyncio, subprocess, os.system, os.popen, os.fork, os.exec*, os.spawn*, os.kill)',
     'work would run outside the timed call',
     ('os.fork', 'os.forkpty', 'os.system', 'os.popen', 'os.posix_spawn', 'os.posix_spawnp', 'os.spawn', 'os.exec', 'os.kill', 'os.killpg')),
    ("ctypes, cffi, mmap, importlib, pickle, eval, exec, compile, __import__, globals(), vars(), type(), id(), getattr/setattr/hasattr with a computed name, dunder attributes (__dict__, __class__, __globals__ ...; super().__init__() is fine), private attributes the kernel did not set (x._base, self._modules), str.format fields that reach attributes, locals(), dir(), memoryview, breakpoint(), help(), input(), exit(), __file__ and the module's __spec__ and __loader__, functools.singledispatch, operator.attrgetter and methodcaller, typing's get_type_hints and ForwardRef",
     'they hide what is called or reach into the process',
     ('eval', 'exec', 'compile', '__import__', 'globals', 'vars', 'type', 'id', 'getattr', 'setattr', 'hasattr', 'delattr', 'locals', 'dir', 'memoryview', 'breakpoint', 'help', 'input', 'exit', 'quit', '__build_class__', '__builtins__', '__file__', '__loader__', '__spec__', '__*', 'obj', 'functools.singledispatch', 'operator.attrgetter', 'operator.methodcaller', 'typing.*', 'typing_extensions.*')),
    ('writing sys.modules, os.environ, builtins, torch.set_* or global RNG state, or attributes of torch, triton, time or the harness (monkeypatching), tracer, profiler and audit hooks (sys.settrace, sys.setprofile, sys.addaudithook), the working folder (os.chdir)',
     'they tamper with the measurement',
     ('sys.modules', 'sys.meta_path', 'sys.path_hooks', 'os.putenv', 'os.unsetenv', 'os.chdir', 'torch.set_', 'torch.cuda.set_', 'torch.manual_seed', 'torch.seed', 'torch.random', 'torch.cuda.manual_seed', 'torch.cuda.manual_seed_all', 'torch.cuda.set_rng_state', 'torch.use_deterministic_algorithms', 'sys.settrace', 'sys.setprofile', 'sys.addaudithook')),
    ('sys.argv, inspect, sys._getframe, stack frames, gc, or anything else that tells a test from a benchmark',
     'a kernel must behave the same whenever it is called',
     ('sys.argv', 'sys.orig_argv', 'sys._getframe', 'f_*', 'tb_frame', 'gi_frame', 'cr_frame', 'ag_frame')),
    ('caching outputs, or anything computed from the inputs, across calls (keyed by id(), data_ptr, shape or content, or functools caches on tensors; caching launch configs computed from sizes is fine)',
     'the verifier calls the kernel on refilled buffers and on inputs it has never seen, and compares the times',
     ()),
    ('open(), sockets and raw file descriptors',
     'a kernel reads and writes only its tensors',
     ('open', 'os.open', 'os.read', 'os.write', 'os.writev', 'os.pwrite', 'os.dup', 'os.dup2', 'os.fdopen', 'os.pipe', 'os.sendfile')),
]


def rule_covers(pattern: str, name: str, module: bool) -> bool:
    """Whether a PROMPT_RULES pattern speaks for a table name (``module``: the
    name is one of BANNED_MODULES)."""
    if pattern == "module:*":
        return module and name.split(".")[0] not in ALLOWED_IMPORTS
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name == pattern or name.startswith(pattern + ".") or (pattern.endswith("_") and name.startswith(pattern))


def uncovered() -> List[str]:
    """The table names no rule of PROMPT_RULES speaks for (should be none)."""
    tables = [(BANNED_MODULES, True), (BANNED_QUALIFIED, False), (BANNED_BUILTINS, False), (BANNED_ATTRIBUTES, False),
              (BANNED_METHOD_NAMES, False), (BANNED_STRING_PREFIXES, False)]
    out = []
    for table, module in tables:
        for name in table:
            if not any(rule_covers(p, name, module) for _w, _y, pats in PROMPT_RULES for p in pats):
                out.append(name)
    return sorted(out)


def export() -> Dict[str, object]:
    """PROMPT_RULES as prompts/bans.json holds it."""
    return {"source": "harness/kagent_harness/banlist.py (PROMPT_RULES); regenerate with "
                      "python -m kagent_harness.banlist > ../prompts/bans.json",
            "rules": [{"what": w, "why": y} for w, y, _p in PROMPT_RULES]}


if __name__ == "__main__":
    import json
    import sys

    json.dump(export(), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
