"""A KernelAgent-style user test: exits 0 when kernel_function matches Model."""
import sys

import torch

from kernel import kernel_function
from problem import Model, get_init_inputs, get_inputs


def main() -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    inputs = [t.to(device) for t in get_inputs()]
    ref = Model(*get_init_inputs()).to(device)(*inputs)
    out = kernel_function(*inputs, *get_init_inputs())
    ok = torch.allclose(out, ref, atol=1e-5, rtol=1e-5)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
