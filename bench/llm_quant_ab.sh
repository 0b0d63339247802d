#!/usr/bin/env bash
# Decode and prefill of Qwen2.5-1.5B with bf16, q8 and q4 weights, npusim next to llama.cpp, one
# process at a time, alternating round by round (docs/benchmarks.md, "Qwen2.5-1.5B decode and prefill
# with q8 / q4 weights"):
#   npusim bench-llm PREFILL DECODE --target cpu --dtype bf16 [--weights-dtype q8|q4]
#       --positions 128 --repeats 10 --no-check   (decode step at position 128, prefill of 128 tokens)
#   llama-bench -m qwen2.5-1.5b-random-{bf16,q8_0,q4_k_m}.gguf -t THREADS -p 128 -n 32 -r 5
# GGUF files and llama-bench: ../shared/peers/README.md (random weights of the same shapes).
#   bench/llm_quant_ab.sh NPUSIM LLAMA_BIN_DIR GGUF_DIR [ROUNDS] [THREADS] > docs/bench/NAME.log
set -uo pipefail
npusim=$1 llama=$2 gguf=$3 rounds=${4:-3} threads=${5:-2}
d="$(cd "$(dirname "$0")/.." && pwd)/tests/data/models"
echo "# $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $threads threads, $(date -u +%FT%TZ)"
for r in $(seq 1 "$rounds"); do
  for w in bf16 q8 q4; do
    opt=()
    [ "$w" = bf16 ] || opt=(--weights-dtype "$w")
    out=$("$npusim" --threads "$threads" bench-llm "$d/qwen2.5_1.5b_prefill" "$d/qwen2.5_1.5b_decode" --target cpu --dtype bf16 "${opt[@]}" \
          --positions 128 --repeats 10 --no-check 2>&1)
    ttft=$(sed -n 's/.*time to first token (prefill 128 tokens): median \([0-9.]*\) ms.*= \([0-9.]*\) tok\/s.*/\1 ms, \2 tok\/s/p' <<< "$out")
    step=$(awk '$1 == 128 { print $2 " ms, " $5 " tok/s, floor " $6 ", " $7 " GB/s" }' <<< "$out")
    load=$(sed -n 's/.*weights \([0-9.]* s\)$/\1/p' <<< "$out")
    echo "round $r npusim $w: decode@128 $step; prefill $ttft; weights ready $load"
  done
  for q in bf16 q8_0 q4_k_m; do
    m="$gguf/qwen2.5-1.5b-random-$q.gguf"
    [ -f "$m" ] || { echo "round $r llama.cpp $q: no $m"; continue; }
    "$llama/llama-bench" -m "$m" -t "$threads" -p 128 -n 32 -r 5 -o md 2>/dev/null |
      awk -v r="$r" -v q="$q" -F'|' '/pp128|tg32/ { gsub(/ +/, " "); print "round " r " llama.cpp " q ":" $(NF-2) $(NF-1) " tok/s" }'
  done
done
