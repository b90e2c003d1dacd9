#!/usr/bin/env bash
# Compares exhaustive knob search with successive halving on mistuned inputs.
# For each bench/tune/<example>.sed (a sed script that mistunes
# examples/<example>/input.py) it runs, from the same mistuned input:
#   (a) exhaustive: the halving strategy with eta 1000, which makes one rung:
#       every variant of the space verified and timed in full;
#   (b) halving: the halving preset (eta 3 unless ETA is set).
# and prints: example, exhaustive best speedup, halving best speedup, the
# fraction of the exhaustive speedup halving reached, both wall times and
# their fraction.
# Usage: [KAGENT=bin/kagent] [PLATFORM=cuda] [MAX_VARIANTS=256] [ETA=3]
#        [ROUNDS=12] [EXAMPLES="rmsnorm softmax"] [OUT=/tmp/tune-bench]
#        scripts/tune-bench.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
KAGENT=${KAGENT:-$root/bin/kagent}
PLATFORM=${PLATFORM:-cuda}
MAX_VARIANTS=${MAX_VARIANTS:-256}
ETA=${ETA:-3}
ROUNDS=${ROUNDS:-12}
OUT=${OUT:-/tmp/tune-bench}
mkdir -p "$OUT"
examples=${EXAMPLES:-$(cd "$root/bench/tune" && ls ./*.sed | sed 's|^\./||; s|\.sed$||')}

# speedup DIR: the best's speedup over the input, from the run's report.json.
speedup() {
  python3 - "$1" <<'PY'
import glob, json, sys
reps = sorted(glob.glob(sys.argv[1] + "/.kagent/runs/*/report.json"))
if not reps:
    print("nan"); sys.exit()
r = json.load(open(reps[-1]))
def find(d):
    if isinstance(d, dict):
        for k, v in d.items():
            if k in ("speedup_vs_input", "speedup_input") and isinstance(v, (int, float)):
                return v
            f = find(v)
            if f is not None:
                return f
    if isinstance(d, list):
        for v in d:
            f = find(v)
            if f is not None:
                return f
    return None
s = (r.get("best") or {}).get("speedup_vs_input")
if not isinstance(s, (int, float)):
    s = find(r)
print("nan" if s is None else "%.3f" % s)
PY
}

# one NAME ETA: a run of the mistuned example with eta ETA; prints "speedup seconds".
one() {
  local ex=$1 eta=$2 dir="$OUT/$1-eta$2"
  rm -rf "$dir" && cp -r "$root/examples/$ex" "$dir"
  sed -i -f "$root/bench/tune/$ex.sed" "$dir/input.py"
  if cmp -s "$dir/input.py" "$root/examples/$ex/input.py"; then
    echo "tune-bench: bench/tune/$ex.sed changes nothing" >&2; echo "nan 0"; return
  fi
  cat > "$dir/bench.yaml" <<YAML
strategy: halving
max_rounds: $ROUNDS
strategy_config:
  max_variants: $MAX_VARIANTS
  eta: $eta
  max_no_improvement: 1
YAML
  local t0=$SECONDS
  "$KAGENT" optimize --kernel-dir "$dir" --platform "$PLATFORM" --config "$dir/bench.yaml" --no-progress \
    >"$dir/stdout.log" 2>"$dir/stderr.log"
  echo "$(speedup "$dir") $((SECONDS - t0))"
}

printf '%-24s %10s %10s %9s %8s %8s %9s\n' example exh_speedup hv_speedup fraction exh_s hv_s time_frac
for ex in $examples; do
  read -r es et < <(one "$ex" 1000)
  read -r hs ht < <(one "$ex" "$ETA")
  python3 - "$ex" "$es" "$hs" "$et" "$ht" <<'PY'
import sys
ex, es, hs, et, ht = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
frac = (hs - 1) / (es - 1) if es == es and hs == hs and es > 1 else float("nan")
print("%-24s %10.3f %10.3f %9.2f %8d %8d %9.2f" % (ex, es, hs, frac, et, ht, ht / et if et else float("nan")))
PY
done
