package prompts

// Ban is one class of operations a candidate kernel must not use.
type Ban struct {
	// What names the operations as the model should read them.
	What string
	// Why says what they would defeat.
	Why string
}

// BannedOperations words, for the model, the ban tables of the verifier's
// static check (harness/kagent_harness/static_check.py:
// BANNED_MODULES, BANNED_QUALIFIED, LIBRARY_OPS/LIBRARY_METHODS, STRICT_OPS,
// BANNED_BUILTINS, BANNED_ATTRIBUTES). The harness is the authority; keep
// this list in step when its tables change. It applies to module-level code,
// kernel_function, ModelNew's methods and what they call, not to the bodies
// of @triton.jit functions. The first entry words ALLOWED_IMPORTS and
// MODULE_ATTRIBUTES; tests/test_static_check.py checks that they agree.
var BannedOperations = []Ban{
	{"imports other than torch, triton and these standard modules: abc, bisect, cmath, collections, contextlib, copy, dataclasses, decimal, enum, faulthandler, fractions, functools, heapq, itertools, json, math, numbers, operator, os, random, re, statistics, sys, textwrap, time, typing, typing_extensions, warnings; and from os, sys, time and warnings anything but os.environ (read only), os.getenv, os.path, os.cpu_count, sys.stdout/stderr/exit/version_info/platform/maxsize, time.perf_counter/time/monotonic/sleep, warnings.warn", "other modules (pydoc, unittest.mock, string, traceback, logging, ...) reach objects by name or open files"},
	{"using a module, a library function or a library class as a value: passing it, storing it in a list, dict or attribute, returning it, binding it with =, for, with or := (T = torch, f = torch.empty, [F]); use modules only as torch.name and call library functions where they are needed", "names the check cannot follow would hide what is called"},
	{"the reference Model, or importing the problem module", "it would run the reference"},
	{"torch.nn.functional (F.*), torch.ops.* (torch.ops.aten.*), torch.linalg / torch.fft / torch.sparse / torch.func / torch.utils", "PyTorch would compute the result"},
	{"calling torch.nn layers in any way (self.fc(x), self.layers[i](x), for layer in self.layers: layer(x), .forward, .children(), .modules(), .apply), building them anywhere but as model attributes (self.fc = nn.Linear(...)), or subclassing them; read their parameters (self.fc.weight) and compute in Triton", "PyTorch would compute the result"},
	{"torch matrix products: matmul, mm, bmm, addmm, baddbmm, mv, dot, einsum, tensordot, linear, the @ operator on tensors", "cuBLAS would compute the result"},
	{"torch convolutions, pooling, attention, embedding, dropout, interpolation and loss functions", "PyTorch would compute the result"},
	{"torch reductions, scans and sorts, as functions or tensor methods: sum, mean, max, min, amax, amin, prod, var, std, norm, cumsum, logsumexp, argmax, topk, sort, sum_to_size, index_add, scatter_add, ...", "PyTorch would compute the result"},
	{"torch softmax, log_softmax and normalizations (layer_norm, batch_norm, group_norm, instance_norm, rms_norm)", "PyTorch would compute the result"},
	{"torch elementwise math outside Triton on a GPU: exp, log, sqrt, rsqrt, pow, abs, where, clamp, maximum, relu, sigmoid, tanh, gelu, silu, ...", "the math belongs in the Triton kernel"},
	{"other array libraries and compilers: numpy, cupy, scipy, jax, numba, pycuda, cuda bindings, cutlass, torch.utils.cpp_extension", "the kernel must compute in Triton"},
	{"torch.compile, torch.jit, torch.export", "another compiler would produce the kernel"},
	{"CUDA/HIP streams and graphs (torch.cuda.Stream, torch.cuda.stream, torch.cuda.graph, CUDAGraph)", "work would escape the timed stream"},
	{"threads, processes and event loops (threading, multiprocessing, concurrent.futures, asyncio, subprocess, os.system, os.fork)", "work would run outside the timed call"},
	{"ctypes, cffi, mmap, importlib, pickle, eval, exec, compile, __import__, globals(), vars(), type(), id(), getattr/setattr/hasattr with a computed name, dunder attributes (__dict__, __class__, __globals__ ...; super().__init__() is fine), private attributes the kernel did not set (x._base, self._modules), str.format fields that reach attributes", "they hide what is called or reach into the process"},
	{"writing sys.modules, os.environ, builtins, torch.set_* or global RNG state, or attributes of torch, triton, time or the harness (monkeypatching)", "they tamper with the measurement"},
	{"sys.argv, inspect, sys._getframe, stack frames, gc, or anything else that tells a test from a benchmark", "a kernel must behave the same whenever it is called"},
	{"caching outputs, or anything computed from the inputs, across calls (keyed by id(), data_ptr, shape or content, or functools caches on tensors; caching launch configs computed from sizes is fine)", "the verifier calls the kernel on refilled buffers and on inputs it has never seen, and compares the times"},
	{"open(), sockets and raw file descriptors", "a kernel reads and writes only its tensors"},
}
