"""The static checker's table of in-process reach: snippets that must be
rejected whatever their spelling (test_static_check.py checks them)."""

# In-process reach: each must be rejected, whatever the spelling.
# (name, source, expected fragment of the reason); checked without require_triton.
BYPASSES = [
    ("module as a function argument", """
        import torch
        def _call(m, a, b):
            return m.matmul(a, b)
        def kernel_function(a, b):
            return _call(torch, a, b)
        """, "torch is a module used as a value"),
    ("module bound by a for target", """
        import torch
        def kernel_function(a, b):
            for m in (torch,):
                return m.einsum("ij,jk->ik", a, b)
        """, "torch is a module used as a value"),
    ("module stored in a list", """
        import torch.nn.functional as F
        MODS = [F]
        def kernel_function(x, w):
            return MODS[0].linear(x, w)
        """, "torch.nn.functional"),
    ("module stored in a dict", """
        import torch
        TABLE = {"t": torch}
        def kernel_function(a, b):
            return TABLE["t"].mm(a, b)
        """, "torch is a module used as a value"),
    ("module stored as an attribute", """
        import torch
        class Holder:
            pass
        H = Holder()
        H.lib = torch
        def kernel_function(a, b):
            return H.lib.mm(a, b)
        """, "torch is a module used as a value"),
    ("module returned from a function", """
        import torch
        def _lib():
            return torch
        def kernel_function(a, b):
            return _lib().mm(a, b)
        """, "torch is a module used as a value"),
    ("module bound by with ... as", """
        import contextlib
        import torch
        def kernel_function(a, b):
            with contextlib.nullcontext(torch) as m:
                return m.mm(a, b)
        """, "torch is a module used as a value"),
    ("module bound by walrus", """
        import torch
        def kernel_function(a, b):
            if (m := torch) is not None:
                return m.mm(a, b)
        """, "torch is a module used as a value"),
    ("module as a default argument", """
        import torch
        def kernel_function(a, b, m=torch):
            return m.mm(a, b)
        """, "torch is a module used as a value"),
    ("module through a lambda default", """
        import torch
        def kernel_function(a, b):
            return (lambda m=torch: m.mm(a, b))()
        """, "torch is a module used as a value"),
    ("module through a comprehension", """
        import torch
        def kernel_function(a, b):
            return [m.mm(a, b) for m in [torch]][0]
        """, "torch is a module used as a value"),
    ("module through global", """
        import torch
        _m = None
        def _set():
            global _m
            _m = torch
        def kernel_function(a, b):
            _set()
            return _m.mm(a, b)
        """, "torch is a module used as a value"),
    ("module through star-unpacking", """
        import torch
        first, *rest = (1, torch)
        def kernel_function(a, b):
            return rest[0].mm(a, b)
        """, "torch is a module used as a value"),
    ("module compared", """
        import torch
        def kernel_function(x):
            return x if torch is not None else x + 1
        """, "torch is a module used as a value"),
    ("getattr with a concatenated name", """
        import torch
        def kernel_function(a, b):
            return getattr(torch, "ein" + "sum")("ij,jk->ik", a, b)
        """, "computed name"),
    ("vars of a module", """
        import torch
        def kernel_function(a, b):
            return vars(torch)["matmul"](a, b)
        """, "vars"),
    ("module __dict__", """
        import torch.nn.functional as F
        def kernel_function(x, w):
            return F.__dict__["linear"](x, w)
        """, "__dict__"),
    ("type(x).__mro__", """
        def kernel_function(x):
            return type(x).__mro__[1].sum(x)
        """, "type() reaches"),
    ("__class__.__subclasses__", """
        def kernel_function(x):
            return ().__class__.__base__.__subclasses__()
        """, "__class__"),
    ("function __globals__", """
        def _f():
            pass
        def kernel_function(x):
            return _f.__globals__["__builtins__"]
        """, "__globals__"),
    ("sys._getframe().f_back", """
        import sys
        def kernel_function(x):
            return sys._getframe().f_back.f_locals["problem"]
        """, "sys._getframe"),
    ("gc.get_objects", """
        import gc
        def kernel_function(x):
            return [o for o in gc.get_objects()][0]
        """, "gc"),
    ("builtins module", """
        import builtins
        def kernel_function(x):
            return builtins.getattr(x, "sum")()
        """, "builtins"),
    ("__builtins__ name", """
        def kernel_function(x):
            return __builtins__["getattr"](x, "sum")()
        """, "__builtins__"),
    ("operator.attrgetter", """
        import operator
        def kernel_function(x):
            return operator.attrgetter("sum")(x)()
        """, "operator.attrgetter"),
    ("functools.partial of getattr", """
        import functools
        def kernel_function(x):
            return functools.partial(getattr, x)("sum")()
        """, "getattr used as a value"),
    ("importlib", """
        import importlib
        def kernel_function(x):
            return importlib.import_module("problem").Model()(x)
        """, "importlib"),
    ("__import__", """
        def kernel_function(x):
            return __import__("sys").modules["problem"].Model()(x)
        """, "__import__"),
    ("exec", """
        def kernel_function(x):
            exec("import sys")
            return x
        """, "exec"),
    ("pickle loads", """
        import pickle
        def kernel_function(x):
            return pickle.loads(b"")
        """, "pickle"),
    ("marshal loads", """
        from marshal import loads
        def kernel_function(x):
            return loads(b"")
        """, "marshal"),
    ("ctypes", """
        import ctypes
        def kernel_function(x):
            return ctypes.cast(id(x), ctypes.py_object).value
        """, "ctypes"),
    ("types.FunctionType", """
        import types
        def kernel_function(x):
            return types.FunctionType
        """, "types"),
    ("decorator runs a library object", """
        import torch
        @torch.compile
        def _f(x):
            return x
        def kernel_function(x):
            return _f(x)
        """, "torch.compile"),
    ("class body computes with a library op", """
        import torch
        class Pre:
            table = torch.softmax(torch.ones(4), 0)
        def kernel_function(x):
            return x * Pre.table[0]
        """, "torch.softmax"),
    ("metaclass with a library class", """
        import torch
        class Meta(type):
            pass
        class K(metaclass=Meta):
            def __init_subclass__(cls, **kw):
                cls.f = torch.mm
        def kernel_function(x):
            return x
        """, "Meta"),
    ("__init_subclass__ captures an op", """
        import torch
        class Base:
            def __init_subclass__(cls):
                cls.op = torch.nn.functional.linear
        def kernel_function(x):
            return x
        """, "torch.nn.functional.linear"),
    ("module __getattr__", """
        import torch
        def __getattr__(name):
            return torch.matmul
        def kernel_function(x):
            return x
        """, "torch.matmul"),
    ("format string reaches attributes", """
        def kernel_function(x):
            return "{0.__class__}".format(x)
        """, "format field"),
    ("computed format string", """
        def kernel_function(x, spec):
            return (spec + "{0}").format(x)
        """, "computed string"),
    ("torch.library", """
        import torch
        def kernel_function(x):
            torch.library.Library("aten", "IMPL")
            return x
        """, "torch.library"),
    ("torch._C", """
        import torch
        def kernel_function(a, b):
            return torch._C._VariableFunctions.mm(a, b)
        """, "private"),
    ("torch.ops through a function argument", """
        import torch
        def _g(ops, a, b):
            return ops.aten.mm(a, b)
        def kernel_function(a, b):
            return _g(torch.ops, a, b)
        """, "torch.ops"),
    ("Tensor.__torch_function__", """
        import torch
        def kernel_function(x):
            return torch.Tensor.__torch_function__
        """, "__torch_function__"),
    ("functional reached through nn.modules", """
        import torch.nn.modules.linear as L
        def kernel_function(x, w):
            return L.F.pad(x, (1, 1))
        """, "torch.nn.functional.pad"),
    ("torch reached through triton.testing", """
        import triton.testing
        def kernel_function(a, b):
            return triton.testing.torch.mm(a, b)
        """, "torch.mm"),
    ("inspect reached through dataclasses", """
        import dataclasses
        def kernel_function(x):
            return dataclasses.inspect.stack()
        """, "inspect"),
    ("sys.modules reached through typing", """
        import typing
        def kernel_function(x):
            return typing.sys.modules["problem"]
        """, "sys.modules"),
    ("einsum by another name", """
        from torch.functional import einsum as contract
        def kernel_function(a, b):
            return contract("ij,jk->ik", a, b)
        """, "einsum"),
    ("library function as a value", """
        import torch
        def _apply(f, a, b):
            return f(a, b)
        def kernel_function(a, b):
            return _apply(torch.mm, a, b)
        """, "torch.mm"),
    ("tensor method through the class", """
        import torch
        def kernel_function(x):
            return torch.Tensor.softmax(x, -1)
        """, "softmax"),
    ("nn layer called through a local name", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                f = self.fc
                return f(x)
        """, "self.fc is a torch.nn layer"),
    ("nn layers called in a loop", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
        """, "layer is a torch.nn layer and the kernel calls it"),
    ("nn layer by index", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.seq = nn.Sequential(nn.Conv2d(3, 3, 3))
            def forward(self, x):
                return self.seq[0](x)
        """, "torch.nn layer and the kernel calls it"),
    ("nn layer passed to a helper", """
        import torch.nn as nn
        def _run(m, x):
            return m(x)
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return _run(self.fc, x)
        """, "uses it as a value"),
    ("nn layers through children()", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return next(iter(self.children()))(x)
        """, ".children"),
    ("nn layers through _modules", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return self._modules["fc"](x)
        """, "private attribute"),
    ("nn layer built by a helper", """
        import torch.nn as nn
        def _make():
            return nn.Linear(4, 4)
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = _make()
            def forward(self, x):
                return self.fc(x)
        """, "builds a torch.nn.Linear outside a model attribute"),
    ("nn layer subclass", """
        import torch.nn as nn
        class Mine(nn.Linear):
            pass
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = Mine(4, 4)
            def forward(self, x):
                return self.fc(x)
        """, "subclasses torch.nn.Linear"),
    ("nn layer to() then called", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return self.fc.to(x.device)(x)
        """, ".to of a torch.nn layer"),
    ("nn.Module.apply hands out layers", """
        import torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                self.apply(print)
                return x
        """, ".apply"),
    ("AttributeError.obj", """
        import torch
        def kernel_function(a, b):
            try:
                torch.no_such_thing
            except AttributeError as e:
                return e.obj
        """, ".obj"),
    ("file object re-initialised on another descriptor", """
        import sys
        def kernel_function(x):
            sys.stdout.buffer.raw.__init__(3, "w")
            return x
        """, ".__init__"),
    ("os beyond its allow-list", """
        import os
        def kernel_function(x):
            os.replace("problem.py", "old.py")
            return x
        """, "os.replace is not allowed"),
    ("logging opens files", """
        import logging
        def kernel_function(x):
            logging.FileHandler("/proc/self/fd/3")
            return x
        """, "imports logging"),
    ("warnings.catch_warnings", """
        import warnings
        def kernel_function(x):
            with warnings.catch_warnings(record=True) as w:
                return x
        """, "warnings.catch_warnings is not allowed"),
    ("faulthandler writes to a descriptor", """
        import faulthandler
        def kernel_function(x):
            faulthandler.dump_traceback(3)
            return x
        """, "faulthandler.dump_traceback is not allowed"),
    ("typing.get_type_hints evaluates strings", """
        import typing
        def _f(x: "__import__('os')"):
            pass
        def kernel_function(x):
            typing.get_type_hints(_f)
            return x
        """, "typing.get_type_hints"),
    ("id tells calls apart", """
        _seen = {}
        def kernel_function(x):
            _seen[id(x)] = x
            return x
        """, "id()"),
    ("tensor method overridden on an object", """
        import torch
        def kernel_function(x):
            out = x + 1
            out.float = lambda: x
            return out
        """, "overriding a tensor method"),
    ("captured allocator", """
        import torch
        _alloc = torch.empty_like
        def kernel_function(x):
            return _alloc(x)
        """, "torch.empty_like is a library function used as a value"),
    ("private attribute of another object", """
        def kernel_function(x):
            return x._base
        """, "private attribute"),
    ("constexpr_function body is Python", """
        import torch
        import triton
        import triton.language as tl
        @triton.constexpr_function
        def _pick(n):
            return torch.mm
        @triton.jit
        def _k(x_ptr, N: tl.constexpr):
            tl.store(x_ptr, _pick(N))
        def kernel_function(x):
            _k[(1,)](x, 4)
            return x
        """, "torch.mm"),
    ("torch inside a jit body", """
        import torch
        import triton
        import triton.language as tl
        @triton.jit
        def _k(x_ptr):
            tl.store(x_ptr, torch.sum(tl.load(x_ptr)))
        def kernel_function(x):
            _k[(1,)](x)
            return x
        """, "torch may not be used inside a @triton.jit function"),
    ("getattr with a literal dunder", """
        def kernel_function(x):
            return getattr(x, "__class__")
        """, "__class__"),
    ("setattr monkeypatch through a literal", """
        import time
        def kernel_function(x):
            setattr(time, "perf_counter", lambda: 0.0)
            return x
        """, "assigns time.perf_counter"),
    ("unknown free name", """
        def kernel_function(x):
            return memoryview(x)
        """, "memoryview"),
]
