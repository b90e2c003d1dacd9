#!/usr/bin/env python3
"""What the judge's reductions of large outputs cost on a GPU, with the fused
kernels (harness/kagent_harness/fused.py) and with torch in pieces.

    PYTHONPATH=harness python3 scripts/judge_reductions.py [--sizes 4M,64M,2049M] [--dtypes float32,bfloat16]

For each size and dtype: an output and its reference (the output within
tolerance, two elements far off, one of them last: the comparison's full
path; 2049M elements, 8.6 GB in fp32, index past 2^31), then the
median milliseconds (wall clock, synchronised) of a verification comparison
(compare_tensor), a timed call's recheck (device_violations, read back), a
checksum (tensor_checksum) and a bitwise equality (tensor_bits_equal), each
both ways, and whether both ways gave the same answer. Prints a Markdown
table; --json FILE writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))

from kagent_harness import checksum, fused, numerics  # noqa: E402


def _size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


def _median_ms(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _row(n: int, dtype: torch.dtype, repeat: int) -> Dict[str, Any]:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(n)
    ref = torch.randn(n, device="cuda", dtype=torch.float32, generator=gen).to(dtype)
    out = ref.clone()
    out[n // 3] += 1.0
    out[n - 1] += 1.0
    tol = numerics.tolerance_for(dtype)
    ops: Dict[str, Callable[[], Any]] = {
        "compare": lambda: numerics.compare_tensor(out, ref, tol, "output").reason,
        "recheck": lambda: int(numerics.device_violations(out, ref, lambda d: tol)),
        "checksum": lambda: checksum.tensor_checksum(out),
        "bits_equal": lambda: numerics.tensor_bits_equal(out, ref),
    }
    row: Dict[str, Any] = {"elements": n, "dtype": str(dtype)[6:], "gb": round(n * ref.element_size() / 1e9, 2)}
    for name, fn in ops.items():
        results = {}
        for way in ("torch", "fused"):
            os.environ["KAGENT_FUSED"] = "1" if way == "fused" else "0"
            results[way] = fn()  # compiles the kernel; the answer to compare
            row[f"{name}_{way}_ms"] = round(_median_ms(fn, repeat), 3)
        row[f"{name}_same"] = results["torch"] == results["fused"]
    row["fused_failure"] = fused.failure()
    del out, ref
    torch.cuda.empty_cache()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="4M,64M,2049M", help="elements per tensor (K, M, G suffixes)")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("judge_reductions: needs a CUDA GPU", file=sys.stderr)
        return 2
    rows: List[Dict[str, Any]] = []
    for size in args.sizes.split(","):
        for dt in args.dtypes.split(","):
            rows.append(_row(_size(size), getattr(torch, dt), args.repeat))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    names = ["compare", "recheck", "checksum", "bits_equal"]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; median ms of {args.repeat} (torch in pieces / fused)\n")
    print("| elements | dtype | GB | " + " | ".join(names) + " | same answer |")
    print("|--:|---|--:|" + "--:|" * len(names) + "---|")
    for r in rows:
        cells = [f"{r[f'{k}_torch_ms']:.2f} / {r[f'{k}_fused_ms']:.2f}" for k in names]
        same = all(r[f"{k}_same"] for k in names)
        print(f"| {r['elements']} | {r['dtype']} | {r['gb']} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")
    if any(r["fused_failure"] for r in rows):
        print(f"\nfused kernels failed: {rows[-1]['fused_failure']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(all(r[f"{k}_same"] for k in names) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
