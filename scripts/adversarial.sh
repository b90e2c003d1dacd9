#!/usr/bin/env bash
# Runs the adversarial suite (platform/worker/testdata/adversarial) through
# `kagent eval` and prints its table: case, class, expectation, outcome.
# Usage: scripts/adversarial.sh [cpu|cuda|rocm|xpu] [CASE_REGEXP]
#   KAGENT_PYTHON: a Python with torch and triton (default: ./.venv/bin/python)
#   KAGENT_ADV_PARALLEL: cases at once (default 2); KAGENT_ADV_HANG_S: hang guard (default 180)
#   KAGENT_ADV_STRICT=1: hold a GPU platform to the KnownEscapes list too (cpu always is)
# Exit status: go test's (non-zero when a case escapes that KnownEscapes does
# not list, or a listed one is now stopped, or an honest control fails).
set -uo pipefail
cd "$(dirname "$0")/.."
export KAGENT_ADV=1 KAGENT_ADV_PLATFORM=${1:-cpu}
if [[ -n ${2:-} ]]; then export KAGENT_ADV_CASES=$2; fi
export KAGENT_PYTHON=${KAGENT_PYTHON:-$PWD/.venv/bin/python}
log=$(mktemp)
go test ./cmd/kagent -run '^TestAdversarial$' -count=1 -v -timeout 90m >"$log" 2>&1
rc=$?
# The table (t.Log indents it), then the verdict lines of go test.
sed -n '/CASE  *CLASS/,/escaped, platform/p' "$log" | sed 's/^        //'
grep -E '^(    )?--- (FAIL|PASS)|^(ok|FAIL)\b' "$log" | grep -v -- '--- PASS: TestAdversarial/' || true
echo "full log: $log"
exit $rc
