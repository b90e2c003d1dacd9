# adversarial: class 5
# technique: socket connects to a TCP port the host listens on at 127.0.0.1
# problem: scale
# expect: contain
# setup: tcp
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
        _port = int(read_bytes("@@HOST@@/port"))
        _c = _sock.create_connection(("127.0.0.1", _port), timeout=5)
        _c.sendall(b"hello from a kernel")
        _c.close()
    except OSError:
        pass


def kernel_function(x):
    return scale(x)
