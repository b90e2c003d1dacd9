"""Writes examples/rmsnorm/transcript-elites: scripted LLM replies for two
rounds of the elites strategy (num_top_kernels 2, num_bottlenecks 1).

The replies are written by us (not by a model); kagent replays them with
--llm-replay examples/rmsnorm/transcript-elites --llm-replay-match purpose.
Optimize replies, in the order they are asked for:

1. the single-pass kernel (BLOCK 256, 8 warps);
2. the same kernel with other comments, docstrings and local names: its
   source differs, its code fingerprint does not (a duplicate by code);
3. the single-pass kernel with BLOCK 128 and 4 warps (another cell);
4. reply 1 with one comment added: a duplicate by normalised source.
"""
import hashlib
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "transcript-elites")
os.makedirs(out, exist_ok=True)
template = open(os.path.join(here, "single_pass.py")).read()


def single_pass(block, warps):
    return template.replace("{{BLOCK}}", str(block)).replace("{{WARPS}}", str(warps))


first = single_pass(256, 8)
renamed = first.replace('"""RMSNorm over dim 1 of a contiguous [B, C, H, W] tensor, in one pass.', '"""One-pass RMSNorm (channels in registers).')
for old, new in (("pid_hw", "col_tile"), ("offs", "cols"), ("chans", "ch"), ("rstd", "inv_rms"),
                 ("    v = tl.load", "    xv = tl.load"), ("v * v", "xv * xv"), ("(v * inv_rms", "(xv * inv_rms"),
                 ("    y = torch.empty_like(x)", "    out = torch.empty_like(x)  # same layout as x"),
                 ("(x, y, C, HW", "(x, out, C, HW"), ("    return y", "    return out")):
    assert old in renamed, old
    renamed = renamed.replace(old, new)
commented = first.replace("    grid = (triton.cdiv(HW, BLOCK), B)", "    # one program per column tile and batch entry\n    grid = (triton.cdiv(HW, BLOCK), B)")
optimize = [(first, "BLOCK=256, num_warps=8"), (renamed, "the same tiling, tidied"),
            (single_pass(128, 4), "BLOCK=128, num_warps=4"), (commented, "BLOCK=256, num_warps=8 again")]

diagnosis = {
    "bottlenecks": [{
        "rank": 1, "category": "memory",
        "summary": "x is read twice: one pass for the sum of squares, a second to scale",
        "reasoning": "the kernel is memory-bound and moves 1.5x the bytes of the floor",
        "root_causes": [{"cause": "the channel loop is run twice over global memory", "evidence": []}],
        "fixes": [{"fix": "hold all C channels of a column tile in registers and reduce across them",
                   "rationale": "one read of x and one write of y is the memory floor"}],
    }, {
        "rank": 2, "category": "latency",
        "summary": "tile width and warps may not give enough bytes in flight",
        "reasoning": "with 64 channels per column a wider tile raises the bytes per program",
        "root_causes": [{"cause": "BLOCK and num_warps fixed by hand", "evidence": []}],
        "fixes": [{"fix": "try BLOCK 128 to 512 with num_warps 4 to 16", "rationale": "more memory-level parallelism"}],
    }],
}
reflection = {
    "was_diagnosis_correct": True, "was_fix_effective": True,
    "expected_outcome": "time near bytes / bandwidth", "actual_outcome": "see the measured time",
    "reasoning": "reading x once removes a third of the traffic",
    "lessons": ["keep the reduced dimension in registers when it is small"],
    "avoid_patterns": ["second pass over global memory"], "try_patterns": ["tile shape sweeps"],
}
seq = 0


def write(purpose, text, n):
    global seq
    seq += 1
    fp = hashlib.sha256(f"elites-{purpose}-{n}".encode()).hexdigest()
    e = {"version": 1, "fingerprint": fp, "n": 1, "seq": seq,
         "request": {"purpose": purpose, "model": "scripted-transcript",
                     "messages": [{"role": "user", "content": f"(scripted {purpose} reply {n}; prompt not recorded)"}]},
         "response": {"text": text, "usage": {"prompt_tokens": 0, "completion_tokens": 0},
                      "cost_usd": 0, "model": "scripted-transcript", "provider": "replay"}}
    with open(os.path.join(out, f"{purpose}-{fp[:16]}-001.json"), "w") as f:
        json.dump(e, f, indent=2)
        f.write("\n")


for n in range(1, 4):  # one diagnosis per parent: 1 in round 1, 2 in round 2
    write("diagnose", "```json\n" + json.dumps(diagnosis, indent=2) + "\n```", n)
for n, (code, what) in enumerate(optimize, start=1):
    write("optimize", f"Read x once ({what}).\n\n```python\n{code}```\n", n)
for n in range(1, 5):
    write("reflect", "```json\n" + json.dumps(reflection, indent=2) + "\n```", n)
print(f"wrote {seq} exchanges to {os.path.normpath(out)}", file=sys.stderr)
