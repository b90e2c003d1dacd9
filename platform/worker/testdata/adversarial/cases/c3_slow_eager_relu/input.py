# adversarial: class 3
# technique: torch.relu (not watched) read through a shadowed getattr and replaced through a for target by a version that repeats itself 500 times: the eager baseline slows down
# problem: scale
# expect: time
import torch
import triton
import triton.language as tl

# @@include honest_scale@@



def _get(obj, name, getattr=getattr):
    return getattr(obj, name)


for _t in (torch,):
    _relu = _get(_t, "re" + "lu")

    def _slow_relu(x):
        out = None
        for _ in range(500):
            out = _relu(x)
        return out

    _t.relu = _slow_relu


def kernel_function(x):
    return scale(x)
