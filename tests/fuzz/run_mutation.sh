#!/usr/bin/env bash
# Runs the structure-aware mutation fuzzer in WORKERS processes at once (seeds FIRST_SEED,
# FIRST_SEED+1, ...), TOTAL executions in all, and sums what they counted.
#
#   tests/fuzz/run_mutation.sh BIN DATA_DIR npubin|kv TOTAL WORKERS FIRST_SEED OUT_DIR [SECONDS]
#
# SECONDS: each worker stops then even if it has not made its share of the executions (the sum
# says how many were made).
# BIN is build/tests/npusim_mutation_fuzz. Each worker's output goes to OUT_DIR/<kind>-<seed>.log;
# inputs that were accepted and then failed, or let anything but npusim::Error escape, are kept in
# OUT_DIR/failed-<seed>/. Exit status 1 when any worker failed, crashed or found such an input.
set -u
if [ $# -ne 7 ] && [ $# -ne 8 ]; then
  echo "usage: $0 BIN DATA_DIR npubin|kv TOTAL WORKERS FIRST_SEED OUT_DIR [SECONDS]" >&2
  exit 2
fi
bin=$1 data=$2 kind=$3 total=$4 workers=$5 first=$6 out=$7 seconds=${8:-}
case $kind in npubin | kv) ;; *) echo "$0: kind must be npubin or kv, not '$kind'" >&2; exit 2 ;; esac
[[ $total =~ ^[0-9]+$ && $workers =~ ^[0-9]+$ && $first =~ ^[0-9]+$ && $seconds =~ ^[0-9]*$ && $workers -ge 1 ]] ||
  { echo "$0: TOTAL, WORKERS, FIRST_SEED and SECONDS are counts" >&2; exit 2; }
mkdir -p "$out" || exit 2
each=$(((total + workers - 1) / workers))
pids=()
for ((w = 0; w < workers; ++w)); do
  seed=$((first + w))
  mkdir -p "$out/failed-$seed"
  NPUSIM_FUZZ_FAILED="$out/failed-$seed" "$bin" "$kind" "$data" "$each" "$seed" $seconds >"$out/$kind-$seed.log" 2>&1 &
  pids+=($!)
done
bad=0
for ((w = 0; w < workers; ++w)); do
  wait "${pids[$w]}"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "seed $((first + w)): exit status $rc (see $out/$kind-$((first + w)).log)" >&2
    bad=1
  fi
done
# The summary line of each worker: "<kind>: N executions: ..." -> sum every number in order.
grep -h -E "^$kind: [0-9]+ executions" "$out"/"$kind"-*.log | awk -v kind="$kind" -v workers="$workers" '
  { n = 0; line = $0; while (match(line, /[0-9]+/)) { v[++n] += substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH) } rows++; last = $0 }
  END {
    if (rows != workers) { printf "%s: only %d of %d workers printed a summary\n", kind, rows, workers; exit 1 }
    # Put the sums back into the last line`s words.
    out = ""; line = last; i = 0
    while (match(line, /[0-9]+/)) { out = out substr(line, 1, RSTART - 1) v[++i]; line = substr(line, RSTART + RLENGTH) }
    print "sum of " workers " workers: " out line
  }' || bad=1
for ((w = 0; w < workers; ++w)); do rmdir "$out/failed-$((first + w))" 2>/dev/null; done
ls -d "$out"/failed-* >/dev/null 2>&1 && { echo "inputs kept in $out/failed-*" >&2; bad=1; }
exit $bad
