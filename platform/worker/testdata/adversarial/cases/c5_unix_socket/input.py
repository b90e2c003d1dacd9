# adversarial: class 5
# technique: socket (imported through sys.modules['importlib']) connects to a path-based Unix socket on the host, which a network namespace does not cover
# problem: scale
# expect: contain
# setup: unixsock adv.sock
import os
import sys
import torch
import triton
import triton.language as tl

# @@include honest_scale@@
# @@include fileio@@

for _s in (sys,):
    _sock = _s.modules["importlib"].import_module("socket")
    try:
        _c = _sock.socket(_sock.AF_UNIX, _sock.SOCK_STREAM)
        _c.connect("@@HOST@@/adv.sock")
        _c.sendall(b"hello from a kernel")
        _c.close()
    except OSError:
        pass


def kernel_function(x):
    return scale(x)
