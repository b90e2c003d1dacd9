#!/usr/bin/env bash
# Runs a KernelBench level-1 subset at its full size with the supplied kernels
# of bench/kernelbench/level1 and prints where each problem's time went.
#
#   scripts/kernelbench-phases.sh KERNELBENCH_DIR OUT [PROBLEMS]
#
# KERNELBENCH_DIR is a clone of github.com/ScalingIntelligence/KernelBench
# (read at run time, never copied into this tree); OUT a new folder for the
# sweep; PROBLEMS the level-1 ids (default 19-32: the activations and
# softmaxes whose kernels bench/kernelbench/level1 supplies).
# Environment: KAGENT (default bin/kagent), PY (python3), PLATFORM (cuda),
# STRATEGY (tune), KERNELS (bench/kernelbench/level1), EXTRA (more sweep flags).
# Prints the summary table (scripts/kernelbench_phases.py) and writes
# OUT/phases.json and OUT/phases.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kb=${1:?usage: $0 KERNELBENCH_DIR OUT [PROBLEMS]}
out=${2:?usage: $0 KERNELBENCH_DIR OUT [PROBLEMS]}
problems=${3:-19-32}
kagent=${KAGENT:-bin/kagent}
py=${PY:-python3}
if [ -d "$kb/KernelBench/level1" ]; then kb="$kb/KernelBench"; fi
[ -d "$kb/level1" ] || { echo "$0: $kb has no level1 folder (give a KernelBench clone)" >&2; exit 2; }
start=$(date +%s)
# shellcheck disable=SC2086
"$kagent" sweep --kernelbench "$kb" --level 1 --problems "$problems" \
  --kernels "${KERNELS:-$here/../bench/kernelbench/level1}" --strategy "${STRATEGY:-tune}" \
  --platform "${PLATFORM:-cuda}" --python "$py" --out "$out" ${EXTRA:-} >"$out.log" 2>&1 || {
  rc=$?; tail -20 "$out.log" >&2; echo "$0: sweep exited $rc (log: $out.log)" >&2; exit "$rc"; }
echo "sweep: $(( $(date +%s) - start )) s wall, log $out.log"
"$py" "$here/kernelbench_phases.py" "$out"
