"""Writes transcript/: scripted LLM replies for the GPU sweep of level1/.

The replies are written by us (not by a model). Each exchange's request holds
the problem (and the kernel the prompt shows) as code blocks, so kagent's
replay (--llm-replay transcript, matching "similar") serves each problem its
own replies: generate -> kernels/KEY.v1.py, diagnose, optimize ->
kernels/KEY.v2.py (another tile shape, which may or may not be faster),
reflect. Run from anywhere: python3 make_transcript.py
"""
import hashlib
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "transcript")
os.makedirs(out, exist_ok=True)
for f in os.listdir(out):
    os.remove(os.path.join(out, f))

diagnosis = {"bottlenecks": [{
    "rank": 1, "category": "memory",
    "summary": "each program moves too few bytes to keep enough loads in flight",
    "reasoning": "the kernel is memory-bound; a wider tile with more warps raises the bytes in flight per SM",
    "root_causes": [{"cause": "small BLOCK and num_warps", "evidence": []}],
    "fixes": [{"fix": "widen the tile and use 8 warps", "rationale": "more memory-level parallelism"}],
}]}
reflection = {
    "was_diagnosis_correct": True, "was_fix_effective": True,
    "expected_outcome": "closer to the bandwidth floor", "actual_outcome": "see the measured time",
    "reasoning": "a tile shape change", "lessons": ["tile shape matters for streaming kernels"],
    "avoid_patterns": [], "try_patterns": ["tile shape sweeps"],
}
seq = 0


def block(src):
    return "```python\n" + src.strip() + "\n```"


def write(purpose, key, blocks, text):
    global seq
    seq += 1
    content = f"(scripted request for {key})\n\n" + "\n\n".join(block(b) for b in blocks)
    fp = hashlib.sha256(f"{purpose}\n{content}".encode()).hexdigest()
    e = {"version": 1, "fingerprint": fp, "n": 1, "seq": seq,
         "request": {"purpose": purpose, "model": "scripted-transcript",
                     "messages": [{"role": "user", "content": content}]},
         "response": {"text": text, "usage": {"prompt_tokens": 0, "completion_tokens": 0},
                      "cost_usd": 0, "model": "scripted-transcript", "provider": "replay"}}
    with open(os.path.join(out, f"{purpose}-{fp[:16]}-001.json"), "w") as f:
        json.dump(e, f, indent=2)
        f.write("\n")


for name in sorted(os.listdir(os.path.join(here, "level1"))):
    key = name[:-3]
    problem = open(os.path.join(here, "level1", name)).read()
    v1 = open(os.path.join(here, "kernels", key + ".v1.py")).read()
    v2 = open(os.path.join(here, "kernels", key + ".v2.py")).read()
    write("generate", key, [problem], f"A Triton kernel for {key}.\n\n" + block(v1) + "\n")
    write("diagnose", key, [problem, v1], "```json\n" + json.dumps(diagnosis, indent=2) + "\n```")
    write("optimize", key, [problem, v1], f"Wider tiles for {key}.\n\n" + block(v2) + "\n")
    write("reflect", key, [problem, v2], "```json\n" + json.dumps(reflection, indent=2) + "\n```")
print(f"wrote {seq} exchanges to {os.path.normpath(out)}", file=sys.stderr)
