#!/usr/bin/env bash
# Runs the four libFuzzer targets side by side, each with its own number of worker processes that
# share one working corpus, for SECONDS seconds; then sums each target's executions over its
# workers and reports crashes/leaks/sanitizer reports.
#   run_all.sh BIN_DIR SEED_DIR OUT_DIR SECONDS "ir_json:6 npubin:5 safetensors:3 synth_manifest:2"
set -uo pipefail
bin=$1 seeds=$2 out=$3 secs=$4 plan=$5
mkdir -p "$out"
export OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
pids=()
for tw in $plan; do
  t=${tw%%:*} w=${tw##*:}
  mkdir -p "$out/$t/corpus" "$out/$t/logs"
  for i in $(seq 1 "$w"); do
    (cd "$out/$t/logs" && exec "$bin/fuzz_$t" "$out/$t/corpus" "$seeds/$t" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$t/" > "w$i.log" 2>&1) &
    pids+=($!)
  done
done
for p in "${pids[@]}"; do wait "$p"; done
status=0
for tw in $plan; do
  t=${tw%%:*} w=${tw##*:}
  execs=$(grep -h "stat::number_of_executed_units" "$out/$t/logs"/w*.log | awk '{s+=$2} END {print s+0}')
  done_w=$(grep -l "stat::number_of_executed_units" "$out/$t/logs"/w*.log | wc -l)
  bad=$(grep -l -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: " "$out/$t/logs"/w*.log | wc -l)
  arts=$(ls "$out/$t" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | wc -l)
  cov=$(grep -h "^#[0-9].*DONE\|^Done" "$out/$t/logs"/w1.log | tail -1)
  echo "fuzz_$t: workers $w (finished $done_w), ${secs}s each, executions $execs, corpus $(ls "$out/$t/corpus" | wc -l) inputs, reports $bad, artifacts $arts; $cov"
  [ "$bad" = 0 ] && [ "$arts" = 0 ] && [ "$done_w" = "$w" ] || status=1
done
exit $status
