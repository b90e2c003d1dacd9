"""Report what this Python offers to kagent, as one JSON line.

Usage: python3 -m kagent_harness.probe   (or run the file directly)
Imports torch and triton if present; never fails because they are missing.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from typing import Any

# A Triton kernel run on CPU tensors through Triton's interpreter, as the cpu
# platform runs candidates; it prints "ok" when the result is right. The loop
# over a runtime argument is what Triton 3.6's interpreter cannot run with
# numpy 2.4 (it converts a one-element array to a Python int).
_INTERPRETER_CHECK = """
import torch, triton, triton.language as tl
@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, reps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(x_ptr + offs, mask=mask)
    for _ in range(0, reps):
        acc += tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, acc, mask=mask)
n = 100
x, y = torch.arange(n, dtype=torch.float32), torch.ones(n)
out = torch.empty(n)
_add[(triton.cdiv(n, 64),)](x, y, out, n, 3, BLOCK=64)
for i in range(n):
    assert out[i].item() == i + 3, f"element {i} is {out[i].item()}, want {i + 3}"
print("ok")
"""


def interpreter_check(timeout_s: float = 120.0) -> dict[str, Any]:
    """Runs a small Triton kernel on the CPU through TRITON_INTERPRET=1 in a
    fresh process: {"ok": bool, "detail": str}."""
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    try:
        done = subprocess.run([sys.executable, "-c", _INTERPRETER_CHECK], env=env, capture_output=True,
                              text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"ok": False, "detail": f"a small kernel did not finish in {timeout_s:.0f} s"}
    if done.returncode == 0 and done.stdout.strip().endswith("ok"):
        return {"ok": True, "detail": "a Triton kernel ran on CPU tensors through TRITON_INTERPRET=1"}
    lines = [l for l in (done.stderr or done.stdout).strip().splitlines() if l.strip()]
    return {"ok": False, "detail": lines[-1].strip() if lines else f"exit status {done.returncode}"}


def probe() -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version(),
                           "executable": sys.executable,
                           "torch": None, "triton": None, "devices": [],
                           "backend": None, "interpreter": None, "errors": []}
    try:
        import torch
        out["torch"] = torch.__version__
        if getattr(torch.version, "hip", None):
            out["backend"] = "rocm"
        elif getattr(torch.version, "cuda", None):
            out["backend"] = "cuda"
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                out["devices"].append({"index": i, "name": p.name,
                                       "total_memory": p.total_memory,
                                       "capability": f"{p.major}.{p.minor}",
                                       "units": p.multi_processor_count})
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and xpu.is_available():
            out["backend"] = "xpu"
            for i in range(xpu.device_count()):
                p = xpu.get_device_properties(i)
                out["devices"].append({"index": i, "name": p.name,
                                       "total_memory": p.total_memory})
    except Exception as e:  # a broken install is reported, not raised
        out["errors"].append(f"torch: {type(e).__name__}: {e}")
    try:
        import triton
        out["triton"] = triton.__version__
    except Exception as e:
        if not isinstance(e, ImportError):
            out["errors"].append(f"triton: {type(e).__name__}: {e}")
    if out["torch"] and out["triton"]:
        out["interpreter"] = interpreter_check()
    return out


if __name__ == "__main__":
    sys.stdout.write(json.dumps(probe()) + "\n")
