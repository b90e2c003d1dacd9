"""Writes examples/rmsnorm/transcript: scripted LLM replies for a greedy run.

The replies are written by us (not by a model); kagent replays them with
--llm-replay examples/rmsnorm/transcript --llm-replay-match purpose, so the
loop, verification, timing and profiling are real while the "LLM" is scripted.
Round 1 proposes the single-pass kernel (x read once); rounds 2-4 propose
variants of it with other tile shapes, which may or may not be faster.
"""
import hashlib
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "transcript")
os.makedirs(out, exist_ok=True)
template = open(os.path.join(here, "single_pass.py")).read()

diagnosis = {
    "bottlenecks": [{
        "rank": 1, "category": "memory",
        "summary": "x is read twice: one pass for the sum of squares, a second to scale",
        "reasoning": "the kernel is memory-bound and moves 1.5x the bytes of the floor (read x twice, write y once)",
        "root_causes": [{"cause": "the channel loop is run twice over global memory",
                         "evidence": [{"metric": "dram bytes", "value": "1.5x the tensor bytes", "interpretation": "x read twice"}]}],
        "fixes": [{"fix": "hold all C channels of a column tile in registers ([C_BLOCK, BLOCK] tile) and reduce across them, then scale and store from registers",
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
variants = [(256, 8), (128, 4), (512, 16), (64, 4)]
seq = 0


def write(purpose, text, round_no):
    global seq
    seq += 1
    fp = hashlib.sha256(f"{purpose}-{round_no}".encode()).hexdigest()
    e = {"version": 1, "fingerprint": fp, "n": 1, "seq": seq,
         "request": {"purpose": purpose, "model": "scripted-transcript",
                     "messages": [{"role": "user", "content": f"(scripted reply for round {round_no}; prompt not recorded)"}]},
         "response": {"text": text, "usage": {"prompt_tokens": 0, "completion_tokens": 0},
                      "cost_usd": 0, "model": "scripted-transcript", "provider": "replay"}}
    with open(os.path.join(out, f"{purpose}-{fp[:16]}-001.json"), "w") as f:
        json.dump(e, f, indent=2)
        f.write("\n")


for r, (block, warps) in enumerate(variants, start=1):
    write("diagnose", "```json\n" + json.dumps(diagnosis, indent=2) + "\n```", r)
    code = template.replace("{{BLOCK}}", str(block)).replace("{{WARPS}}", str(warps))
    write("optimize", f"Read x once: all channels of a column tile stay in registers (BLOCK={block}, num_warps={warps}).\n\n```python\n{code}```\n", r)
    write("reflect", "```json\n" + json.dumps(reflection, indent=2) + "\n```", r)
print(f"wrote {seq} exchanges to {os.path.normpath(out)}", file=sys.stderr)
