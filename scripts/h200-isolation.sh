#!/usr/bin/env bash
# The isolated judge on an NVIDIA GPU: the sandbox, the cuda suite with every
# candidate in its runner, and the cost of the isolation per candidate.
# Expects bin/kagent, bin/worker.test and bin/enginebench (linux/amd64,
# static: make gpu-binaries). Results (logs, tables) go to $OUT.
# Usage: OUT=/tmp/out [PY=python3] scripts/h200-isolation.sh [steps...]
#   steps: doctor sandbox ncubox suite pytests overhead eval adversarial
#   (PROBS: the overhead step's problems, default softmax_small softmax_large)
set -uo pipefail
OUT=${OUT:-/tmp/kagent-isolation}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KAGENT_CACHE_DIR=${KAGENT_CACHE_DIR:-/tmp/kagent-cache}
PY=${PY:-python3}
steps=${*:-doctor sandbox suite overhead eval}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }

for step in $steps; do
  case $step in
  doctor)
    log doctor
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"
    bin/kagent doctor --python "$PY" 2>&1 | tee "$OUT/doctor.txt"
    ;;
  sandbox)
    # Runners in the OS sandbox on this machine (KAGENT_SANDBOX=on: fail, not
    # fall back, so the reason shows).
    log "runner server in the sandbox"
    (cd platform/worker && KAGENT_PYTHON=$PY KAGENT_SANDBOX=on timeout 180 ../../bin/worker.test \
      -test.run "TestRunnersSandboxed$|TestRunnerSandboxSeesGPU$|TestRunnerSandboxCompilesC$" -test.v -test.timeout 170s) > "$OUT/sandbox.txt" 2>&1
    echo "sandbox exit $?" | tee -a "$OUT/steps.log"; tail -5 "$OUT/sandbox.txt"
    ;;
  ncubox)
    # ncu and the profiled program in the runners' sandbox: the probe, then
    # profiles of a Triton kernel whose module attacks the run, inside and
    # outside the sandbox, with what each took.
    log "ncu in the sandbox"
    (cd platform/worker && KAGENT_PYTHON=$PY KAGENT_SANDBOX=on timeout 400 ../../bin/worker.test \
      -test.run 'TestProfileSandbox' -test.v -test.timeout 390s) > "$OUT/ncubox.txt" 2>&1
    echo "ncubox exit $?" | tee -a "$OUT/steps.log"
    grep -E 'probe|profiled in|ncu profile|^(--- |ok|FAIL|PASS)|want' "$OUT/ncubox.txt" | tail -30
    ;;
  suite)
    # SANDBOX: the KAGENT_SANDBOX for the suite (default on: sandboxed or refused).
    log "cheat and fault suite on cuda (KAGENT_SANDBOX=${SANDBOX:-on})"
    (cd platform/worker && KAGENT_PYTHON=$PY KAGENT_SANDBOX=${SANDBOX:-on} KAGENT_SUITE_PLATFORM=cuda timeout "${SUITE_LIMIT:-300}" \
      ../../bin/worker.test -test.run 'TestSuite$' -test.v -test.timeout 9m) > "$OUT/suite-cuda.txt" 2>&1
    echo "suite exit $?" | tee -a "$OUT/steps.log"
    grep -E '^(--- FAIL|ok|FAIL|PASS)|want|sandbox' "$OUT/suite-cuda.txt" | tail -20
    ;;
  overhead)
    # Per-candidate wall time (3-draw verify + timing, compile included), the
    # candidate in its runner (default) against in the worker's own process.
    for prob in ${PROBS:-softmax_small softmax_large}; do
      for mode in isolated inprocess; do
        log "enginebench $prob $mode"
        if [ $mode = inprocess ]; then export KAGENT_INPROCESS=1; else unset KAGENT_INPROCESS; fi
        timeout 200 bin/enginebench -warm-only -large "" -n "${N:-10}" -problem "cmd/enginebench/problems/$prob" \
          -python "$PY" -repo . -out "$OUT/eb-$prob-$mode" > "$OUT/eb-$prob-$mode.txt" 2>"$OUT/eb-$prob-$mode.stderr"
        echo "enginebench $prob $mode exit $?" | tee -a "$OUT/steps.log"
        grep -E "warm workers" "$OUT/eb-$prob-$mode.txt"
      done
    done
    unset KAGENT_INPROCESS
    ;;
  eval)
    log "eval rmsnorm (input kernel, sandboxed runner)"
    t0=$SECONDS
    # Device memory of each process, every 2 s (the judge and the runner).
    (while :; do echo "$((SECONDS - t0)) $(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ' ')"; sleep 2; done) \
      > "$OUT/eval-rmsnorm-memory.txt" 2>&1 &
    mon=$!
    timeout 300 bin/kagent eval --kernel-dir examples/rmsnorm --platform cuda --python "$PY" --json 2>"$OUT/eval-rmsnorm.stderr" > "$OUT/eval-rmsnorm.json"
    echo "eval exit $? wall $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"; tail -3 "$OUT/eval-rmsnorm.stderr"
    head -c 3000 "$OUT/eval-rmsnorm.json"
    kill $mon 2>/dev/null
    ;;
  adversarial)
    log "adversarial suite on cuda"
    if [ -x bin/adversarial.test ]; then
      # ADV_CASES: a regexp of case names (default: all); ADV_PARALLEL: cases at once;
      # ADV_HANG_S: the hang guard of one case (default 360 s: the cases that reach
      # timing time 10,000 calls of a few-microsecond kernel each, at once on one
      # GPU; with 5 at once a call took 3-5.5 ms on an H100, a target about 30 s,
      # and with 6 three controls outlasted 180 s); ADV_LOGS: a folder
      # for each case's output, its workers' stderr and a hung run's stacks.
      (cd cmd/kagent && KAGENT_ADV=1 KAGENT_PYTHON=$PY KAGENT_ADV_PLATFORM=cuda KAGENT_BINARY=$PWD/../../bin/kagent \
        KAGENT_ADV_CASES=${ADV_CASES:-} KAGENT_ADV_PARALLEL=${ADV_PARALLEL:-6} KAGENT_ADV_HANG_S=${ADV_HANG_S:-360} \
        KAGENT_ADV_LOGS=${ADV_LOGS:-} timeout "${ADV_LIMIT:-540}" \
        ../../bin/adversarial.test -test.run 'TestAdversarial' -test.v -test.timeout 9m) > "$OUT/adversarial-cuda.txt" 2>&1
      echo "adversarial exit $?" | tee -a "$OUT/steps.log"
      grep -E '^(--- FAIL|ok|FAIL|PASS)|escape' "$OUT/adversarial-cuda.txt" | tail -20
    else
      echo "no bin/adversarial.test" | tee -a "$OUT/steps.log"
    fi
    ;;
  pytests)
    # The harness's Python suite on this machine (its GPU tests run here).
    log "python harness suite on cuda"
    (cd harness && KAGENT_SUITE_PLATFORM=cuda timeout "${PY_LIMIT:-300}" "$PY" -m unittest ${PY_TESTS:-tests.test_gpu} -v) \
      > "$OUT/python-suite-cuda.txt" 2>&1
    echo "python suite exit $?" | tee -a "$OUT/steps.log"; tail -4 "$OUT/python-suite-cuda.txt"
    ;;
  *) echo "unknown step $step" ;;
  esac
done
