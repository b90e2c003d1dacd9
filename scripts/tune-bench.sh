#!/usr/bin/env bash
# Compares the knob searches with an exhaustive one on mistuned inputs.
# For each bench/tune/<example>.sed (a sed script that mistunes
# examples/<example>/input.py) it runs, from the same mistuned input:
#   exhaustive: the halving strategy with eta 1000, which makes one rung:
#               every variant of the knob space around the best verified and
#               timed in full, then again around each new best;
#   halving:    successive halving (eta ETA, default 3) over the same spaces;
#   tune:       the local knob search (the MAX_TUNE most promising one- and
#               two-knob moves of the best a round, default 8), stopping
#               after two rounds without a promotion as its preset does;
#   autotune:   the same spaces screened many variants per worker call, a
#               walk to the fastest screened variant, FINALISTS (default 3)
#               verified and timed in full, as its preset does.
# and prints, for each: the best speedup over the mistuned input, the
# fraction of the exhaustive speedup it reached ((s-1)/(s_exh-1)), its wall
# time, its search time (from the end of round 0 to the run's end: every
# round, then autotune's held-out screen of its contenders, the final
# acceptance gate and the best's profile; the baselines and the input's own
# evaluation, the same for every mode, are outside it), the fractions of the
# exhaustive times, the variants evaluated in full and the variants screened.
# Every mode profiles the best once, at the run's end (profile_candidates:
# final, as the knob-search presets do).
# The size timed is bench/tune/<example>.size (KEY=VALUE,... of the problem's
# size constants; SIZE overrides it; the cpu platform uses the cpu size).
# Writes OUT/table.md, OUT/table.json and, per run, OUT/<example>-<mode>/
# with the run's report.json, events.jsonl and phases.json (seconds per
# variant, verification and timing phases: scripts/kernelbench_phases.py).
# RUN_LIMIT (seconds, 0: none) stops a run that takes longer: kagent ends it
# as interrupted (without a report), and its row says "cut" and gives the
# best of the rounds it finished, from the run's events, so one slow search
# does not cost the table; it also gives the fastest variant timed so far
# (best_timed_ms, best_timed_speedup), which the unfinished round had not
# yet compared and promoted.
# Usage: [KAGENT=bin/kagent] [PLATFORM=cuda] [MAX_VARIANTS=256] [ETA=3]
#        [MAX_TUNE=8] [FINALISTS=3] [ROUNDS=12] [MODES="exhaustive halving tune autotune"] [RUN_LIMIT=0]
#        [EXAMPLES="rmsnorm softmax"] [OUT=/tmp/tune-bench] scripts/tune-bench.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
KAGENT=${KAGENT:-$root/bin/kagent}
PLATFORM=${PLATFORM:-cuda}
MAX_VARIANTS=${MAX_VARIANTS:-256}
ETA=${ETA:-3}
MAX_TUNE=${MAX_TUNE:-8}
ROUNDS=${ROUNDS:-12}
FINALISTS=${FINALISTS:-3}
MODES=${MODES:-exhaustive halving tune autotune}
RUN_LIMIT=${RUN_LIMIT:-0}
OUT=${OUT:-/tmp/tune-bench}
PY=${PY:-python3}
export KAGENT_PYTHON=${KAGENT_PYTHON:-$PY}
mkdir -p "$OUT"
examples=${EXAMPLES:-$(cd "$root/bench/tune" && ls ./*.sed | sed 's|^\./||; s|\.sed$||')}

# config MODE: the run's configuration.
config() {
  printf 'profile_candidates: final\n'
  case $1 in
  exhaustive) printf 'strategy: halving\nmax_rounds: %s\nstrategy_config:\n  max_variants: %s\n  eta: 1000\n  max_no_improvement: 1\n' "$ROUNDS" "$MAX_VARIANTS" ;;
  halving) printf 'strategy: halving\nmax_rounds: %s\nstrategy_config:\n  max_variants: %s\n  eta: %s\n  max_no_improvement: 1\n' "$ROUNDS" "$MAX_VARIANTS" "$ETA" ;;
  tune) printf 'strategy: tune\nmax_rounds: %s\nstrategy_config:\n  max_variants: %s\n  max_no_improvement: 2\n' "$ROUNDS" "$MAX_TUNE" ;;
  autotune) printf 'strategy: autotune\nmax_rounds: %s\nstrategy_config:\n  max_variants: %s\n  finalists: %s\n  max_no_improvement: 1\n' "$ROUNDS" "$MAX_VARIANTS" "$FINALISTS" ;;
  *) echo "tune-bench: unknown mode $1 (exhaustive halving tune autotune)" >&2; return 2 ;;
  esac
}

# one EXAMPLE MODE: a run of the mistuned example; prints its row as JSON.
one() {
  local ex=$1 mode=$2 dir="$OUT/work/$1-$2" keep="$OUT/$1-$2" size
  rm -rf "$dir" "$keep" && mkdir -p "$OUT/work" "$keep" && cp -r "$root/examples/$ex" "$dir" && rm -rf "$dir/.kagent"
  sed -i -f "$root/bench/tune/$ex.sed" "$dir/input.py"
  if cmp -s "$dir/input.py" "$root/examples/$ex/input.py"; then
    echo "tune-bench: bench/tune/$ex.sed changes nothing" >&2; return 1
  fi
  config "$mode" > "$dir/bench.yaml" || return 2
  size=${SIZE:-$(cat "$root/bench/tune/$ex.size" 2>/dev/null)}
  [ "$PLATFORM" = cpu ] && size=cpu
  local t0=$SECONDS
  timeout --signal=TERM --kill-after=60 "$RUN_LIMIT" "$KAGENT" optimize --kernel-dir "$dir" --platform "$PLATFORM" --config "$dir/bench.yaml" ${size:+--size "$size"} \
    --no-progress >"$keep/stdout.log" 2>"$keep/stderr.log"
  local rc=$? secs=$((SECONDS - t0)) run
  run=$(ls -d "$dir"/.kagent/runs/*/ 2>/dev/null | tail -1)
  [ -n "$run" ] && cp "$run/events.jsonl" "$keep/" && { cp "$run/report.json" "$keep/" 2>/dev/null || true; }
  # Where the run's time went (scripts/kernelbench_phases.py's per-run summary).
  [ -n "$run" ] && "$PY" -c 'import json, sys; sys.path.insert(0, sys.argv[1]); from kernelbench_phases import problem_phases
json.dump(problem_phases(sys.argv[2]), sys.stdout, indent=1)' "$root/scripts" "$run" > "$keep/phases.json"
  "$PY" - "$keep" "$ex" "$mode" "$secs" "$rc" "${size:-default}" <<'PY'
import json, sys
from datetime import datetime
keep, ex, mode, secs, rc, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
row = {"example": ex, "mode": mode, "size": size, "seconds": secs, "exit": rc, "cut": rc == 124, "speedup": None, "variants": 0}
try:
    evs = [json.loads(l) for l in open(keep + "/events.jsonl") if l.strip()]
except (OSError, ValueError):
    evs = []
# The search: from the end of round 0 to the run's end (or the last event of
# a cut run); rounds_seconds stops at the end of the last round.
when = lambda e: datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
r0 = [e for e in evs if e.get("event") == "round_finished" and e.get("round") == 0]
late = [e for e in evs if e.get("round", 0) > 0]
rounds = [e for e in late if e.get("event") == "round_finished"] or late
ends = [e for e in evs if e.get("event") == "run_finished"] or late
row["search_seconds"] = round(when(ends[-1]) - when(r0[0]), 1) if r0 and ends else 0.0
row["rounds_seconds"] = round(when(rounds[-1]) - when(r0[0]), 1) if r0 and rounds else 0.0
row["screened"] = sum(e.get("screened", 0) for e in evs if e.get("event") == "screened")
try:
    r = json.load(open(keep + "/report.json"))
    row["speedup"] = (r.get("best") or {}).get("speedup_vs_input")
    row["variants"] = sum(1 for c in r.get("candidates", []) if c.get("round", 0) > 0)
    row["best_ms"] = (r.get("best") or {}).get("median_ms")
    row["input_ms"] = next((c["timing"]["median_ms"] for c in r["candidates"] if c["id"] == "input" and c.get("timing")), None)
except (OSError, ValueError, KeyError, StopIteration):
    # No report (a run cut at RUN_LIMIT): the best so far from its events.
    done = [e for e in evs if e.get("event") == "round_finished"]
    if done:
        row["speedup"], row["best_ms"] = done[-1].get("speedup_vs_input"), done[-1].get("best_ms")
    row["variants"] = sum(1 for e in evs if e.get("event") == "candidate_verified" and e.get("round", 0) > 0)
    row["input_ms"] = next((e.get("median_ms") for e in evs if e.get("event") == "candidate_timed" and e.get("candidate") == "input"), None)
    # The fastest variant timed in the round the cut interrupted: a lower
    # bound on what the unfinished round would have promoted (its median,
    # not yet confirmed by the promotion's interleaved comparison).
    timed = [e for e in evs if e.get("event") == "candidate_timed" and e.get("round", 0) > 0 and e.get("median_ms")]
    if timed and row["input_ms"]:
        fast = min(timed, key=lambda e: e["median_ms"])
        row["best_timed_ms"], row["best_timed_speedup"] = fast["median_ms"], row["input_ms"] / fast["median_ms"]
print(json.dumps(row))
PY
}

rows="$OUT/rows.jsonl"
: > "$rows"
for ex in $examples; do
  for mode in $MODES; do
    one "$ex" "$mode" >> "$rows"
    tail -1 "$rows" >&2
  done
done
rm -rf "$OUT/work"
"$PY" - "$rows" "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
out = sys.argv[2]
exh = {r["example"]: r for r in rows if r["mode"] == "exhaustive"}
table = []
for r in rows:
    e = exh.get(r["example"])
    s, es = r.get("speedup"), (e or {}).get("speedup")
    r["fraction"] = (s - 1) / (es - 1) if s and es and es > 1 else None
    r["time_fraction"] = r["seconds"] / e["seconds"] if e and e["seconds"] else None
    r["search_fraction"] = r["search_seconds"] / e["search_seconds"] if e and e.get("search_seconds") else None
    table.append(r)
json.dump(table, open(out + "/table.json", "w"), indent=1)
f = lambda v, p="%.3f": "n/a" if v is None else p % v
lines = ["| example | size | mode | best speedup vs input | fraction of exhaustive gain | wall s | fraction of exhaustive wall | search s | fraction of exhaustive search | variants in full | screened | exit |",
         "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
for r in table:
    ex = str(r["exit"])
    if r.get("cut"):
        ex = "cut at RUN_LIMIT" + (", fastest timed %.3f×" % r["best_timed_speedup"] if r.get("best_timed_speedup") else "")
    lines.append("| %s | %s | %s | %s | %s | %d | %s | %.1f | %s | %d | %d | %s |" % (r["example"], r["size"], r["mode"], f(r.get("speedup")),
                 f(r.get("fraction"), "%.2f"), r["seconds"], f(r.get("time_fraction"), "%.2f"), r.get("search_seconds") or 0,
                 f(r.get("search_fraction"), "%.2f"), r["variants"], r.get("screened") or 0, ex))
open(out + "/table.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
