#!/usr/bin/env bash
# Full-size workloads on an NVIDIA GPU: timing against Nsight Compute, the
# spread of repeated timings, a greedy run whose candidates misuse device
# memory, and a KernelBench level-1 sweep with its phases.
# Expects bin/kagent and bin/enginebench (linux/amd64: make gpu-binaries) and
# a KernelBench clone (KB, default .cache/KernelBench; never committed).
# Usage: OUT=/tmp/out [PY=python3] [KB=DIR] scripts/h200-workloads.sh [steps...]
#   steps: agreement memory sweep ab reductions methods baselines context ncucost ncusets
set -uo pipefail
OUT=${OUT:-/tmp/kagent-workloads}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KAGENT_CACHE_DIR=${KAGENT_CACHE_DIR:-/tmp/kagent-cache}
PY=${PY:-python3}
KB=${KB:-.cache/KernelBench}
[ -d "$KB/KernelBench/level1" ] && KB=$KB/KernelBench
steps=${*:-agreement memory sweep}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }
# Every worker's stderr in its own file, and the harness processes' Python
# stacks written there 20 s before a step's time limit (stacks SECONDS).
export KAGENT_WORKER_STDERR=${KAGENT_WORKER_STDERR:-$OUT/stderr}
stacks() { (sleep "$(( $1 > 40 ? $1 - 20 : 20 ))"; pkill -USR1 -f kagent_harness) >/dev/null 2>&1 & echo $!; }

# monitor FILE: every 2 s, the device memory in use and each process's share
# with its command line (which process holds what), until killed; prints its pid.
monitor() {
  local t0=$SECONDS
  (while :; do
     echo "$((SECONDS - t0)) s: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader)"
     nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null | while IFS=', ' read -r pid mem unit; do
       echo "  $pid $mem $unit $(tr '\0' ' ' < /proc/"$pid"/cmdline 2>/dev/null | cut -c1-160)"
     done
     sleep 2
   done) > "$1" 2>&1 &
  echo $!
}

# agreement_dir NAME PROBLEM KERNEL BATCH DIM: a kernel dir under
# .cache/agreement with the KernelBench problem at another size.
agreement_dir() {
  local d=.cache/agreement/$1
  mkdir -p "$d"
  sed -e "s/^batch_size = .*/batch_size = $4/" -e "s/^dim = .*/dim = $5/" "$KB/level1/$2.py" > "$d/problem.py"
  cp "bench/kernelbench/level1/$3/kernel.py" "$d/kernel.py"
  echo "$d"
}

for step in $steps; do
  case $step in
  agreement)
    # kagent's time against ncu's gpu__time_duration (the median of NCU_PROFILES (3) profiles of one call each,
    # caches flushed, clocks as they are), and 5 timings of the kernel and
    # of both baselines.
    dirs=$(agreement_dir relu-12M 19_ReLU 19_ReLU 192 65536),$(agreement_dir softmax-16M 23_Softmax 23_Softmax 1024 16384)
    [ -n "${AGREE_ALL:-}" ] && dirs=$dirs,$(agreement_dir gelu-32M 26_GELU_ 26_GELU 512 65536),$(agreement_dir relu-128M 19_ReLU 19_ReLU 2048 65536)
    # AGREE_20US: a ReLU of about 20 us on an H200 (the target's smallest kernel).
    [ -n "${AGREE_20US:-}" ] && dirs=$(agreement_dir relu-10M 19_ReLU 19_ReLU 160 65536),$dirs
    dirs=$dirs,${EXTRA_DIRS:-}
    # AGREE_CLOCKS: "device" (events after a hold, the default) and/or
    # "profiler" (KAGENT_TIMING_CLOCK=profiler), one enginebench run each.
    for clock in ${AGREE_CLOCKS:-device}; do
      sfx=; [ "$clock" = device ] || sfx=-$clock
      tc=; [ "$clock" = profiler ] && tc=profiler
      log "enginebench ($clock clock): stability and ncu agreement on ${dirs//,/ }"
      KAGENT_TIMING_CLOCK=$tc timeout "${AGREE_LIMIT:-420}" bin/enginebench -skip-eval -baselines -large "${dirs%,}" -python "$PY" -repo . -ncu-profiles "${NCU_PROFILES:-3}" \
        -out "$OUT/agreement$sfx" > "$OUT/agreement$sfx.txt" 2>"$OUT/agreement$sfx.stderr"
      echo "agreement ($clock) exit $?" | tee -a "$OUT/steps.log"
      cat "$OUT/agreement$sfx.txt"
    done
    ;;
  baselines)
    # The spread of the kernel's and both baselines' medians over separate
    # runs (a fresh worker each, as separate sweeps have): REPEATS (4) runs
    # of kagent eval per agreement dir and clock (scripts/eval_spread.py).
    names="relu-12M:19_ReLU:192:65536 softmax-16M:23_Softmax:1024:16384"
    [ -n "${AGREE_ALL:-}" ] && names="$names gelu-32M:26_GELU_:512:65536"
    mkdir -p "$OUT/baselines"
    for clock in ${AGREE_CLOCKS:-device}; do
      tc=; [ "$clock" = profiler ] && tc=profiler
      for spec in $names; do
        IFS=: read -r name prob batch dim <<< "$spec"
        d=$(agreement_dir "$name" "$prob" "${prob%_}" "$batch" "$dim")
        for i in $(seq "${REPEATS:-4}"); do
          log "kagent eval $name ($clock clock), run $i"
          KAGENT_TIMING_CLOCK=$tc timeout "${EVAL_LIMIT:-120}" bin/kagent eval --json --no-progress --kernel-dir "$d" \
            --platform cuda --python "$PY" > "$OUT/baselines/$name-$clock-$i.json" 2>>"$OUT/baselines.stderr"
          echo "eval $name $clock $i exit $?" | tee -a "$OUT/steps.log"
          # The device's clocks and temperature after each run: a spread
          # across runs may follow them.
          echo "$name $clock $i: $(nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw \
            --format=csv,noheader 2>&1)" >> "$OUT/baselines-clocks.txt"
        done
      done
    done
    "$PY" scripts/eval_spread.py "$OUT/baselines" --json "$OUT/baselines.json" | tee "$OUT/baselines.md"
    tar czf "$OUT/baselines-eval.tgz" -C "$OUT" baselines && rm -rf "$OUT/baselines"
    ;;
  memory)
    # A greedy run on the 7.5 GB-per-tensor RMSNorm whose scripted replies
    # hold a kernel that allocates until the device is full and one that
    # leaks 1 GiB per call; the run must finish all its rounds.
    log "greedy on examples/rmsnorm with transcript-memory"
    mkdir -p .cache && rm -rf .cache/rmsnorm-memory && cp -r examples/rmsnorm .cache/rmsnorm-memory && rm -rf .cache/rmsnorm-memory/transcript*
    t0=$SECONDS
    mon=$(monitor "$OUT/memory-usage.txt")
    # The profiler is not what this run is about (ncu of a 7.5 GB problem
    # takes 20-30 s a kernel).
    dump=$(stacks "${MEM_LIMIT:-480}")
    KAGENT_PROFILE_CANDIDATES=${MEM_PROFILE:-none} timeout "${MEM_LIMIT:-480}" bin/kagent optimize --kernel-dir .cache/rmsnorm-memory --platform cuda --python "$PY" \
      --llm-replay examples/rmsnorm/transcript-memory --llm-replay-match purpose --max-rounds "${MEM_ROUNDS:-3}" \
      --out "$OUT/memory-run" > "$OUT/memory.txt" 2>&1
    echo "memory run exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/steps.log"
    kill $mon "$dump" 2>/dev/null
    tail -25 "$OUT/memory.txt"
    ;;
  sweep)
    log "KernelBench level 1 ${PROBLEMS:-19-32}, supplied kernels, tune"
    rm -rf "$OUT/sweep"
    mon=$(monitor "$OUT/sweep-usage.txt")
    dump=$(stacks "${SWEEP_LIMIT:-560}")
    KAGENT=bin/kagent PY=$PY timeout "${SWEEP_LIMIT:-560}" scripts/kernelbench-phases.sh "$KB" "$OUT/sweep" "${PROBLEMS:-19-32}" \
      > "$OUT/sweep-phases.txt" 2>&1
    echo "sweep exit $?" | tee -a "$OUT/steps.log"
    kill "$mon" "$dump" 2>/dev/null
    cat "$OUT/sweep-phases.txt"
    [ -f "$OUT/sweep/results.json" ] && "$PY" scripts/kernelbench_phases.py "$OUT/sweep" > /dev/null 2>&1
    # The run dirs' JSON and logs in one archive (kernels and databases left out).
    tar czf "$OUT/sweep-json.tgz" --exclude='*.py' --exclude='*.db*' -C "$OUT" sweep sweep.log stderr 2>/dev/null
    rm -rf "$OUT/sweep"
    ;;
  ab)
    # One switch's A/B on whole sweeps: each problem of PROBLEMS (default
    # 20-22) swept once with AB_A, then once with AB_B (default
    # KAGENT_FREEZE_BASELINE=0, then 1), alternating, each side's workers'
    # stderr in its own folder (KAGENT_TRACE=1 from the caller adds traces);
    # scripts/ab_table.py prints the two sides per problem.
    a=${AB_A:-KAGENT_FREEZE_BASELINE=0}; b=${AB_B:-KAGENT_FREEZE_BASELINE=1}
    ids=()
    IFS=, read -ra parts <<< "${PROBLEMS:-20-22}"
    for part in "${parts[@]}"; do
      if [[ $part == *-* ]]; then ids+=($(seq "${part%-*}" "${part#*-}")); else ids+=("$part"); fi
    done
    log "A/B ($a | $b) on KernelBench level 1: ${ids[*]}"
    for id in "${ids[@]}"; do
      for side in a b; do
        assign=$a; [ "$side" = b ] && assign=$b
        rm -rf "$OUT/ab-$side-$id"
        env "$assign" KAGENT_WORKER_STDERR="$OUT/stderr-ab-$side" KAGENT=bin/kagent PY=$PY \
          timeout "${AB_LIMIT:-150}" scripts/kernelbench-phases.sh "$KB" "$OUT/ab-$side-$id" "$id" \
          > "$OUT/ab-$side-$id.txt" 2>&1
        echo "ab $side $id exit $?" | tee -a "$OUT/steps.log"
        [ -f "$OUT/ab-$side-$id/phases.json" ] && cp "$OUT/ab-$side-$id/phases.json" "$OUT/ab-$side-$id.phases.json"
        rm -rf "$OUT/ab-$side-$id"
      done
    done
    "$PY" scripts/ab_table.py "$a" "$b" "$OUT"/ab-a-*.phases.json -- "$OUT"/ab-b-*.phases.json \
      | tee "$OUT/ab.md"
    tar czf "$OUT/ab-stderr.tgz" -C "$OUT" stderr-ab-a stderr-ab-b 2>/dev/null && rm -rf "$OUT"/stderr-ab-?
    ;;
  reductions)
    # The judge's comparisons, checksums and bit-compares of large outputs,
    # fused kernels against torch in pieces (scripts/judge_reductions.py).
    log "judge reductions, fused and in pieces"
    timeout "${RED_LIMIT:-240}" "$PY" scripts/judge_reductions.py --json "$OUT/reductions.json" \
      > "$OUT/reductions.md" 2>"$OUT/reductions.stderr"
    echo "reductions exit $?" | tee -a "$OUT/steps.log"
    cat "$OUT/reductions.md"
    ;;
  methods)
    # Ways of timing a call against ncu (scripts/timing_methods.py).
    log "timing methods against ncu"
    # METHODS_CASES: the script's cases (default: its own list); METHODS_NCU_RUNS:
    # ncu processes per case; METHODS_NCU_HELD=1: ncu also after the hold.
    timeout "${METHODS_LIMIT:-300}" "$PY" scripts/timing_methods.py --ncu "${NCU:-ncu}" --json "$OUT/methods.json" \
      ${METHODS_CASES:+--cases "$METHODS_CASES"} ${METHODS_NCU_RUNS:+--ncu-runs "$METHODS_NCU_RUNS"} \
      ${METHODS_NCU_HELD:+--ncu-held} \
      > "$OUT/methods.md" 2>"$OUT/methods.stderr"
    echo "methods exit $?" | tee -a "$OUT/steps.log"
    cat "$OUT/methods.md"
    ;;
  context)
    # How long a process's CUDA context takes, plain and under ncu, beside
    # what kagent's other processes do (scripts/context_cost.py): the final
    # profile's "device" phase. CONTEXT_REPS repeats (default 3).
    log "CUDA context cost"
    timeout "${CONTEXT_LIMIT:-540}" "$PY" scripts/context_cost.py --ncu "${NCU:-ncu}" --reps "${CONTEXT_REPS:-3}" \
      --json "$OUT/context.json" > "$OUT/context.md" 2>"$OUT/context.stderr"
    echo "context_cost exit $?" | tee -a "$OUT/steps.log"
    cat "$OUT/context.md"
    ;;
  ncucost)
    # Where one ncu profile's time goes (scripts/ncu_cost.py), then kagent's
    # own profile of the full-size ReLU (6.4 GB per tensor) with its debug
    # log (the wrapper's phases, replay passes, bytes saved), on an idle GPU
    # and with another process holding all but 24 GB of the device memory.
    log "the cost of one ncu profile"
    timeout "${NCUCOST_LIMIT:-300}" "$PY" scripts/ncu_cost.py --ncu "${NCU:-ncu}" --json "$OUT/ncucost.json" \
      > "$OUT/ncucost.md" 2>"$OUT/ncucost.stderr"
    echo "ncu_cost exit $?" | tee -a "$OUT/steps.log"
    cat "$OUT/ncucost.md"
    d=$(agreement_dir relu-6G 19_ReLU 19_ReLU 4096 393216)
    for held in idle held; do
      hog=
      if [ "$held" = held ]; then
        coproc HOLD { "$PY" scripts/ncu_cost.py --hold -1; }
        read -r line <&"${HOLD[0]}"; echo "$line"; hog=$HOLD_PID
      fi
      t0=$(date +%s%N)
      timeout 180 bin/kagent --log-level debug profile -k "$d" --platform cuda --python "$PY" --no-progress --json \
        > "$OUT/profile-$held.json" 2> "$OUT/profile-$held.log"
      echo "kagent profile ($held) exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/steps.log"
      grep -h "ncu profile" "$OUT/profile-$held.log" | tail -1
      [ -n "$hog" ] && kill "$hog" && wait "$hog" 2>/dev/null
    done
    ;;
  ncusets)
    # kagent's profile of one ReLU call under each profile_metrics set (full,
    # then roofline, NCUSETS_ROUNDS times, alternating): the debug log's replay
    # passes and phases, and where the JSON places the kernel. NCUSETS_BATCH sets
    # the batch (default 4096: 6.4 GB per tensor; 2048 fits an 80 GB GPU).
    log "kagent profile per metric set"
    d=$(agreement_dir relu-sets 19_ReLU 19_ReLU "${NCUSETS_BATCH:-4096}" 393216)
    for r in $(seq "${NCUSETS_ROUNDS:-2}"); do
      for set in full roofline; do
        t0=$(date +%s%N)
        KAGENT_PROFILE_METRICS=$set timeout 180 bin/kagent --log-level debug profile -k "$d" --platform cuda --python "$PY" \
          --no-progress --json > "$OUT/ncusets-$set-$r.json" 2> "$OUT/ncusets-$set-$r.log"
        echo "profile_metrics $set round $r: exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/steps.log"
        grep -h "ncu profile" "$OUT/ncusets-$set-$r.log" | tail -1 | tee -a "$OUT/steps.log"
      done
    done
    "$PY" - "$OUT" <<'PY' | tee "$OUT/ncusets.md"
import glob, json, os, sys
print("| set | round | class | memory SOL % | compute SOL % | floor fraction | time ms | bytes GB | metrics |")
print("|---|--:|---|--:|--:|--:|--:|--:|--:|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncusets-*.json"))):
    name = os.path.basename(f)[len("ncusets-"):-len(".json")]
    s, r = name.rsplit("-", 1)
    try:
        j = json.load(open(f))
    except ValueError:
        print(f"| {s} | {r} | no JSON | | | | | | |")
        continue
    m, rl = j.get("metrics") or {}, j.get("roofline") or {}
    print(f"| {s} | {r} | {rl.get('class', '')} | {rl.get('memory_sol_pct', 0):.1f} | {rl.get('compute_sol_pct', 0):.1f} | "
          f"{rl.get('floor_fraction', 0):.3f} | {m.get('time_ms', 0):.4f} | {(m.get('bytes_read', 0) + m.get('bytes_write', 0)) / 1e9:.2f} | {len(m.get('raw') or {})} |")
PY
    ;;
  *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
