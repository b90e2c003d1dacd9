#!/usr/bin/env bash
# Shipping and search on an NVIDIA GPU: a real run exported by kagent export
# whose exported tests pass on the GPU, and the search strategies (elites,
# beam) on a recorded transcript with their candidates per minute and the
# duplicates they skipped.
# Expects bin/kagent (linux/amd64: make linux, or the GPU binaries).
# Usage: OUT=/tmp/out [PY=python3] scripts/h200-ship.sh [steps...]
#   steps: export search
# PLATFORM=cpu SIZE=cpu runs the same steps here, without a GPU (a check of the
# script; CPU times say nothing about GPU speed).
set -uo pipefail
OUT=${OUT:-/tmp/kagent-ship}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KAGENT_CACHE_DIR=${KAGENT_CACHE_DIR:-/tmp/kagent-cache}
PY=${PY:-python3}
export KAGENT_PYTHON=$PY
PLATFORM=${PLATFORM:-cuda}
SIZE_FLAG=${SIZE:+--size $SIZE}
DEVICE=cuda
[ "$PLATFORM" = cpu ] && DEVICE=cpu && export TRITON_INTERPRET=1 # the exported checks run through the interpreter
steps=${*:-export search}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }

# kdir NAME: a fresh copy of examples/NAME under .cache/ship (never committed).
kdir() {
  local d=.cache/ship/$1
  rm -rf "$d" && mkdir -p .cache/ship && cp -r "examples/$1" "$d"
  echo "$d"
}

for step in $steps; do
  case $step in
  export)
    # A greedy run of the rmsnorm example on the GPU (replies from its
    # transcript), exported in every form; the exported hf tests, the patch
    # module and the KernelBench ModelNew are then checked on the GPU.
    d=$(kdir rmsnorm)
    log "export: optimize $d on $PLATFORM"
    timeout 400 bin/kagent optimize --kernel-dir "$d" --platform "$PLATFORM" $SIZE_FLAG --llm-replay "$d/transcript" \
      --llm-replay-match purpose --max-rounds 2 --no-progress > "$OUT/export-optimize.txt" 2>&1
    echo "optimize exit $?" | tee -a "$OUT/steps.log"
    rm -rf "$OUT/export"
    bin/kagent export --kernel-dir "$d" --out "$OUT/export" --json > "$OUT/export-manifest.json" 2> "$OUT/export.stderr"
    echo "export exit $?" | tee -a "$OUT/steps.log"
    (cd "$OUT/export/hf" && PYTHONPATH=torch-ext timeout 300 "$PY" -m unittest discover -s tests -v) > "$OUT/export-hf-tests.txt" 2>&1
    echo "hf tests exit $?" | tee -a "$OUT/steps.log"
    KAGENT_CHECK_DEVICE=$DEVICE timeout 300 "$PY" export/testdata/check_export.py "$OUT/export" rmsnorm match > "$OUT/export-patch-check.txt" 2>&1
    echo "patch and kernelbench check exit $?" | tee -a "$OUT/steps.log"
    ;;
  search)
    # elites and beam on the rmsnorm transcript made for elites (two of its
    # rewrites repeat earlier ones: one by source, one by compiled code).
    # Three models simulated by the one transcript (llm.steps: diagnosis on
    # one, rewrites on a cheaper one, reflection on the default), each
    # recorded exchange given 1000 prompt and 500 completion tokens so that
    # each model's spend shows.
    for strategy in elites beam_search; do
      d=$(kdir rmsnorm)
      # The strategy's preset (as --strategy gives it) and llm.steps.
      { cat "configs/strategies/$strategy.yaml"; cat <<YAML; } > ".cache/ship/$strategy.yaml"
llm:
  model: gpt-5
  price_in_per_m: 1.25
  price_out_per_m: 10
  steps:
    diagnose: {model: claude-sonnet-4-5, price_in_per_m: 3, price_out_per_m: 15}
    optimize: {model: gpt-5-mini, price_in_per_m: 0.25, price_out_per_m: 2}
    refine: {model: gpt-5-mini, price_in_per_m: 0.25, price_out_per_m: 2}
YAML
      "$PY" - "$d/transcript-elites" <<'PYEOF'
import glob, json, sys
for n in glob.glob(sys.argv[1] + "/*.json"):
    ex = json.load(open(n))
    ex["response"]["usage"] = {"prompt_tokens": 1000, "completion_tokens": 500}
    json.dump(ex, open(n, "w"))
PYEOF
      log "search: $strategy on $PLATFORM"
      start=$SECONDS
      timeout 500 bin/kagent optimize --kernel-dir "$d" --platform "$PLATFORM" $SIZE_FLAG \
        --config ".cache/ship/$strategy.yaml" --llm-replay "$d/transcript-elites" --llm-replay-match purpose --max-rounds 2 \
        --no-progress > "$OUT/search-$strategy.txt" 2>&1
      echo "$strategy exit $? in $((SECONDS - start)) s" | tee -a "$OUT/steps.log"
      run=$(ls -td "$d"/.kagent/runs/*/ 2>/dev/null | head -1)
      [ -n "$run" ] && cp "$run/report.json" "$OUT/search-$strategy-report.json" && cp "$run/report.md" "$OUT/search-$strategy-report.md"
    done
    "$PY" - "$OUT" > "$OUT/search-table.md" <<'EOF'
import json, sys, datetime as dt
out = sys.argv[1]
print("| strategy | candidates | correct | duplicates by source | by code | wall s | candidates/min | best speedup vs input | LLM calls and USD by model |")
print("|---|--:|--:|--:|--:|--:|--:|--:|---|")
for s in ("elites", "beam_search"):
    try:
        r = json.load(open(f"{out}/search-{s}-report.json"))
    except OSError:
        print(f"| {s} | no report | | | | | | | |")
        continue
    cands = [c for c in r["candidates"] if c.get("round", 0) > 0]
    wall = (dt.datetime.fromisoformat(r["finished_at"].replace("Z", "+00:00"))
            - dt.datetime.fromisoformat(r["started_at"].replace("Z", "+00:00"))).total_seconds()
    d = r.get("duplicates", {})
    best = r.get("best") or {}
    models = ", ".join(f"{m['model']} {m['calls']} (${m.get('cost_usd', 0):.4f})" for m in (r.get("llm") or {}).get("by_model") or [])
    print(f"| {s} | {len(cands)} | {sum(1 for c in cands if c.get('correct'))} | {d.get('by_source', 0)} | {d.get('by_code', 0)} "
          f"| {wall:.0f} | {60 * len(cands) / wall if wall else 0:.1f} | {best.get('speedup_vs_input', 0):.2f} "
          f"| {models} |")
EOF
    cat "$OUT/search-table.md"
    ;;
  *)
    echo "unknown step $step (export search)" >&2
    exit 2
    ;;
  esac
done
