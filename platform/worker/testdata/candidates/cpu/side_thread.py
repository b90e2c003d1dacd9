"""Cheat: does the work on a background thread."""
import threading

import torch


def kernel_function(x, y):
    out = torch.empty_like(x)

    def work():
        s = x + y
        out.copy_(s * (s > 0).to(s.dtype))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    return out
