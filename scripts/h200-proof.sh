#!/usr/bin/env bash
# Runs kagent's GPU proofs on an NVIDIA machine and leaves logs and tables in $OUT.
# Expects prebuilt linux/amd64 binaries in bin/ (make gpu-binaries):
#   bin/kagent, bin/enginebench, bin/worker.test
# Usage: OUT=/tmp/out scripts/h200-proof.sh [steps...]   (steps: doctor suite eval bench profile)
set -uo pipefail
OUT=${OUT:-/tmp/kagent-proof}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KAGENT_CACHE_DIR=${KAGENT_CACHE_DIR:-/tmp/kagent-cache}
PY=${PY:-python3}
steps=${*:-doctor bench suite profile eval}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }

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
    (cd platform/worker && KAGENT_PYTHON=$PY KAGENT_SUITE_PLATFORM=cuda timeout 170 ../../bin/worker.test -test.run 'TestSuite$' -test.v -test.timeout 9m) > "$OUT/suite-cuda.txt" 2>&1
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
  esac
done
log done
