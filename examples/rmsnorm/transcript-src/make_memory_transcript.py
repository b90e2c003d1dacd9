"""Writes examples/rmsnorm/transcript-memory: scripted LLM replies for a greedy
run in which candidates misuse device memory.

The replies are written by us (not by a model); kagent replays them with
--llm-replay examples/rmsnorm/transcript-memory --llm-replay-match purpose.
Round 1 proposes a kernel that allocates 8 GiB blocks until the device is
full; round 2 a correct single-pass kernel that leaks 1 GiB of device memory
on every call (kept in a module-level list); rounds 3-5 single-pass kernels
with other tile shapes. Refinements (after a failed verification) are
single-pass kernels too. On the full-size problem (7.5 GB per tensor) the run
must reject the first two as ``oom`` (or time the second while its memory
lasts) and go on to the end.
"""
import hashlib
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "transcript-memory")
os.makedirs(out, exist_ok=True)
template = open(os.path.join(here, "single_pass.py")).read()


def single(block, warps):
    return template.replace("{{BLOCK}}", str(block)).replace("{{WARPS}}", str(warps))


OOM = single(256, 8).replace(
    "def kernel_function(", '''_held = []


def kernel_function(''').replace(
    "    x = x.contiguous()\n", '''    # Allocates 8 GiB blocks until the device has no more.
    while True:
        _held.append(torch.empty(8 << 30, dtype=torch.uint8, device=x.device))
    x = x.contiguous()
''')
LEAK = single(256, 8).replace(
    "def kernel_function(", '''_leaked = []


def kernel_function(''').replace(
    "    return y\n", '''    # Keeps 1 GiB of device memory from every call, never freed.
    _leaked.append(torch.empty(1 << 30, dtype=torch.uint8, device=x.device))
    return y
''')
assert OOM != single(256, 8) and LEAK != single(256, 8)

diagnosis = {
    "bottlenecks": [{
        "rank": 1, "category": "memory",
        "summary": "x is read twice: one pass for the sum of squares, a second to scale",
        "reasoning": "the kernel is memory-bound and moves 1.5x the bytes of the floor",
        "root_causes": [{"cause": "the channel loop is run twice over global memory",
                         "evidence": [{"metric": "dram bytes", "value": "1.5x the tensor bytes", "interpretation": "x read twice"}]}],
        "fixes": [{"fix": "hold all C channels of a column tile in registers and reduce across them",
                   "rationale": "one read of x and one write of y is the memory floor"}],
    }],
}
reflection = {
    "was_diagnosis_correct": True, "was_fix_effective": False,
    "expected_outcome": "time near bytes / bandwidth", "actual_outcome": "see the verdict",
    "reasoning": "scripted", "lessons": ["free what a call allocates"],
    "avoid_patterns": ["module-level tensors"], "try_patterns": ["tile shape sweeps"],
}
seq = 0


def write(purpose, text, n):
    global seq
    seq += 1
    fp = hashlib.sha256(f"{purpose}-{n}".encode()).hexdigest()
    e = {"version": 1, "fingerprint": fp, "n": 1, "seq": seq,
         "request": {"purpose": purpose, "model": "scripted-transcript",
                     "messages": [{"role": "user", "content": f"(scripted reply {n}; prompt not recorded)"}]},
         "response": {"text": text, "usage": {"prompt_tokens": 0, "completion_tokens": 0},
                      "cost_usd": 0, "model": "scripted-transcript", "provider": "replay"}}
    with open(os.path.join(out, f"{purpose}-{fp[:16]}-001.json"), "w") as f:
        json.dump(e, f, indent=2)
        f.write("\n")


kernels = [("allocates until the device is full", OOM), ("leaks 1 GiB per call", LEAK),
           ("single pass, BLOCK 256", single(256, 8)), ("single pass, BLOCK 128", single(128, 4)),
           ("single pass, BLOCK 512", single(512, 16))]
for n, (what, code) in enumerate(kernels, start=1):
    write("diagnose", "```json\n" + json.dumps(diagnosis, indent=2) + "\n```", n)
    write("optimize", f"Kernel {n}: {what}.\n\n```python\n{code}```\n", n)
    write("reflect", "```json\n" + json.dumps(reflection, indent=2) + "\n```", n)
for n, (block, warps) in enumerate([(64, 4), (128, 8), (256, 4)], start=1):
    write("refine", f"Fixed: no memory kept between calls (BLOCK={block}).\n\n```python\n{single(block, warps)}```\n", n)
print(f"wrote {seq} exchanges to {os.path.normpath(out)}", file=sys.stderr)
