"""Report what this Python offers to kagent, as one JSON line.

Usage: python3 -m kagent_harness.probe   (or run the file directly)
Imports torch and triton if present; never fails because they are missing.
"""
from __future__ import annotations

import json
import platform
import sys
from typing import Any


def probe() -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version(),
                           "executable": sys.executable,
                           "torch": None, "triton": None, "devices": [],
                           "backend": None, "errors": []}
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
    return out


if __name__ == "__main__":
    sys.stdout.write(json.dumps(probe()) + "\n")
