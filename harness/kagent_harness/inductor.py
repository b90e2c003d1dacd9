"""torch.compile's CPU back-end, set up for the judge's baselines.

Two costs of inductor on the CPU are paid again by every new process, though
nothing they produce changes from one run to the next:

- its precompiled C++ headers go to a folder under the temporary directory,
  which is the worker's own and removed with it; they are kept in
  ``TORCHINDUCTOR_CACHE_DIR`` instead (kagent's cache, set by the supervisor);
- its check that the compiler can build and load code for the CPU's vector
  instructions runs a Python that imports torch (seconds). A passed check is
  remembered in that cache, keyed by torch's version, the compiler binary and
  the CPU's flags; a later process with the same key skips it. A record that
  lies can only make the compile baseline fail, never a candidate pass.

Both use attributes of torch's private modules where they exist and do
nothing where they do not.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from typing import Optional


def _cache_dir() -> str:
    return os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")


def _isa_key() -> Optional[str]:
    try:
        import torch
        from torch._inductor import config

        cxx = config.cpp.cxx[-1] if isinstance(config.cpp.cxx, tuple) else config.cpp.cxx
        path = shutil.which(str(cxx or "g++")) or ""
        st = os.stat(path) if path else None
        flags = ""
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line
                    break
    except Exception:  # noqa: BLE001 - no key, no shortcut
        return None
    raw = "\0".join([torch.__version__, path, str(st.st_size if st else ""), str(st.st_mtime_ns if st else ""),
                     flags, os.environ.get("ATEN_CPU_CAPABILITY", "")])
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def set_up() -> None:
    """Before the first torch.compile of a process on the CPU."""
    root = _cache_dir()
    if not root:
        return
    try:
        from torch._inductor import codecache, config
    except Exception:  # noqa: BLE001
        return
    if hasattr(codecache, "_HEADER_DIR"):
        codecache._HEADER_DIR = os.path.join(root, "precompiled_headers")
        codecache._HEADER_LOCK_DIR = os.path.join(codecache._HEADER_DIR, "locks")
    key = _isa_key()
    cpp = getattr(config, "cpp", None)
    if key and cpp is not None and getattr(cpp, "vec_isa_ok", None) is None:
        if os.path.exists(os.path.join(root, "kagent-vec-isa", key)):
            cpp.vec_isa_ok = True


def remember() -> None:
    """After a torch.compile on the CPU succeeded: record a passed check."""
    root = _cache_dir()
    key = _isa_key() if root else None
    if not key:
        return
    try:
        from torch._inductor import config
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        if config.cpp.vec_isa_ok is not None or not pick_vec_isa():
            return
        d = os.path.join(root, "kagent-vec-isa")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, key), "w", encoding="utf-8") as f:
            f.write("passed\n")
    except Exception:  # noqa: BLE001 - only a shortcut is lost
        pass
