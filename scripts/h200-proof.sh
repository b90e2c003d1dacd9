#!/usr/bin/env bash
# Runs kagent's GPU proofs on an NVIDIA machine and leaves logs and tables in $OUT.
# Expects prebuilt linux/amd64 binaries in bin/ (make gpu-binaries):
#   bin/kagent, bin/enginebench, bin/worker.test
# Usage: OUT=/tmp/out [BUDGET=seconds] scripts/h200-proof.sh [steps...]
#   steps: doctor suite eval size bench profile greedy beam tune[:EXAMPLE,...] sweep
#   (SUITE_LIMIT, SUITE_RUN: the suite's time limit and -test.run pattern; TUNE_ROUNDS, TUNE_LIMIT: tune's --max-rounds and per-example time limit;
#   SWEEP_ARGS: more sweep flags, e.g. --config FILE with platform_kwargs: {ncu_ahead: "false"})
# Everything but steps.log ends in $OUT/kagent-proof.tgz.
# With BUDGET set, each step's timeout is cut to what is left of it and a step
# that cannot get 30 s is skipped (the device machine's call limit).
set -uo pipefail
OUT=${OUT:-/tmp/kagent-proof}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KAGENT_CACHE_DIR=${KAGENT_CACHE_DIR:-/tmp/kagent-cache}
PY=${PY:-python3}
steps=${*:-doctor bench suite profile eval}
BUDGET=${BUDGET:-100000}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }
# tmo N: N seconds, or what is left of the budget (less a margin) if smaller.
tmo() { local left=$((BUDGET - SECONDS - 10)); if ((left < $1)); then echo $left; else echo "$1"; fi; }
# timed NAME LIMIT CMD...: runs CMD under the cut timeout, logs exit status and wall time.
timed() {
  local name=$1 limit; limit=$(tmo "$2"); shift 2
  if ((limit < 30)); then log "skip $name (budget)"; return 0; fi
  local t0=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  echo "$name exit $rc wall $((SECONDS - t0)) s (limit $limit s)" | tee -a "$OUT/steps.log"
}
examples="rmsnorm softmax layernorm matvec swiglu fused_residual_rmsnorm"

for step in $steps; do
  case $step in
  doctor)
    log doctor
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.txt"
    bin/kagent doctor --python "$PY" 2>&1 | tee "$OUT/doctor.txt"
    bin/kagent specs H200 2>&1 | tee "$OUT/specs-h200.txt"
    ;;
  suite)
    log "adversarial and fault suite on cuda"
    (cd platform/worker && KAGENT_PYTHON=$PY KAGENT_SUITE_PLATFORM=cuda timeout "${SUITE_LIMIT:-240}" ../../bin/worker.test -test.run "${SUITE_RUN:-TestSuite$}" -test.v -test.timeout 9m) > "$OUT/suite-cuda.txt" 2>&1
    echo "suite exit $?" | tee -a "$OUT/steps.log"
    grep -E '^(---|ok|FAIL|PASS)|CASE|pass|fail:|fault:' "$OUT/suite-cuda.txt" | tail -60
    ;;
  eval)
    log "eval rmsnorm"
    t0=$SECONDS
    timeout 300 bin/kagent eval --kernel-dir examples/rmsnorm --platform cuda --python "$PY" 2>"$OUT/eval-rmsnorm.stderr" | tee "$OUT/eval-rmsnorm.txt"
    echo "eval wall $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"; tail -3 "$OUT/eval-rmsnorm.stderr"
    # The transcript's single-pass kernel (round 1 of the replayed greedy run).
    sed -e 's/{{BLOCK}}/256/' -e 's/{{WARPS}}/8/' examples/rmsnorm/transcript-src/single_pass.py > /tmp/single_pass.py
    timeout 300 bin/kagent eval --kernel-dir examples/rmsnorm --kernel /tmp/single_pass.py --platform cuda --python "$PY" 2>>"$OUT/eval-rmsnorm.stderr" | tee "$OUT/eval-rmsnorm-single-pass.txt"
    ;;
  size)
    # --size on the GPU: each example's cpu size, and explicit pairs.
    for ex in $examples; do
      log "eval $ex --size cpu"
      timeout 200 bin/kagent eval --kernel-dir "examples/$ex" --platform cuda --size cpu --python "$PY" 2>>"$OUT/eval-size.stderr" | tee -a "$OUT/eval-size.txt"
      echo "eval-size $ex exit ${PIPESTATUS[0]}" | tee -a "$OUT/steps.log"
    done
    log "eval rmsnorm --size batch_size=4"
    timeout 200 bin/kagent eval --kernel-dir examples/rmsnorm --platform cuda --size batch_size=4 --python "$PY" 2>>"$OUT/eval-size.stderr" | tee -a "$OUT/eval-size.txt"
    echo "eval-size pairs exit ${PIPESTATUS[0]}" | tee -a "$OUT/steps.log"
    ;;
  bench)
    log "engine benchmark"
    timeout 270 bin/enginebench -python "$PY" -repo . -out "$OUT" 2>"$OUT/enginebench.stderr" | tee "$OUT/enginebench.txt"
    tail -5 "$OUT/enginebench.stderr"
    ;;
  profile)
    log "profile rmsnorm"
    t0=$SECONDS
    timeout 200 bin/kagent profile --kernel-dir examples/rmsnorm --platform cuda --python "$PY" 2>&1 | tee "$OUT/profile-rmsnorm.txt"
    echo "profile wall $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"
    ;;
  greedy)
    log "optimize rmsnorm greedy, replayed transcript"
    timed greedy "${GREEDY_LIMIT:-330}" bin/kagent optimize --kernel-dir examples/rmsnorm --strategy greedy --platform cuda --python "$PY" \
      --llm-replay examples/rmsnorm/transcript --llm-replay-match purpose --max-rounds "${GREEDY_ROUNDS:-4}" \
      --out "$OUT/rmsnorm-greedy" --events "$OUT/rmsnorm-greedy.jsonl" >"$OUT/rmsnorm-greedy.txt" 2>&1
    tail -25 "$OUT/rmsnorm-greedy.txt"
    ;;
  beam)
    log "optimize rmsnorm beam_search, replayed transcript"
    timed beam "${BEAM_LIMIT:-330}" bin/kagent optimize --kernel-dir examples/rmsnorm --strategy beam_search --platform cuda --python "$PY" \
      --llm-replay examples/rmsnorm/transcript --llm-replay-match purpose --max-rounds "${BEAM_ROUNDS:-2}" \
      --out "$OUT/rmsnorm-beam" --events "$OUT/rmsnorm-beam.jsonl" >"$OUT/rmsnorm-beam.txt" 2>&1
    tail -25 "$OUT/rmsnorm-beam.txt"
    ;;
  tune*)
    list=$examples
    [[ $step == tune:* ]] && list=${step#tune:} && list=${list//,/ }
    for ex in $list; do
      log "optimize $ex tune"
      timed "tune-$ex" "${TUNE_LIMIT:-150}" bin/kagent optimize --kernel-dir "examples/$ex" --strategy tune --platform cuda --python "$PY" \
        --max-rounds "${TUNE_ROUNDS:-2}" --out "$OUT/tune-$ex" --events "$OUT/tune-$ex.jsonl" >"$OUT/tune-$ex.txt" 2>&1
      tail -6 "$OUT/tune-$ex.txt"
    done
    ;;
  sweep)
    log "sweep of the GPU test problems, replayed transcript"
    strategy="--strategy greedy"
    [[ " ${SWEEP_ARGS:-} " == *" --config "* ]] && strategy=""  # the config names it
    timed sweep "${SWEEP_LIMIT:-500}" bin/kagent sweep --kernelbench sweep/testdata/gpu --level 1 --problems "${SWEEP_PROBLEMS:-1-8}" $strategy \
      --platform cuda --python "$PY" --llm-replay sweep/testdata/gpu/transcript --max-rounds 1 --seeds 1 \
      --out "$OUT/sweep" ${SWEEP_ARGS:-} >"$OUT/sweep.txt" 2>&1
    tail -30 "$OUT/sweep.txt"
    ;;
  *)
    echo "unknown step $step" >&2
    ;;
  esac
done
log done
# The device tool returns at most 8 files: everything but the step log goes
# into one archive.
(cd "$OUT" && tar czf /tmp/kagent-proof.tgz --exclude=kagent-proof.tgz . && find . -mindepth 1 -maxdepth 1 ! -name steps.log -exec rm -rf {} + && mv /tmp/kagent-proof.tgz .)
