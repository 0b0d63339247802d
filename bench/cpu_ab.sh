#!/usr/bin/env bash
# Two builds of the CLI timed against each other on the CPU target, alternating round by round (one
# process at a time): ResNet-18 f32 and bf16, ResNet-50 bf16 (`npusim bench --warmup 5 --repeats 30`,
# median ms) and Qwen2.5-1.5B bf16 decode (`generate --max-new-tokens 17`, median ms per token).
#   bench/cpu_ab.sh OLD_NPUSIM NEW_NPUSIM [ROUNDS] > docs/bench/NAME.log
set -euo pipefail
old=$1 new=$2 rounds=${3:-3}
d="$(cd "$(dirname "$0")/.." && pwd)/tests/data/models"
echo "# npusim bench MODEL --target cpu --dtype D --warmup 5 --repeats 30 (median ms) and generate qwen2.5_1.5b --target cpu --dtype bf16 --max-new-tokens 17,"
echo "# OLD = $old, NEW = $new, alternating, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(date -u +%F)"
for r in $(seq 1 "$rounds"); do
  for which in OLD NEW; do
    bin=$old
    [ "$which" = NEW ] && bin=$new
    for m in "resnet18 f32" "resnet18 bf16" "resnet50 bf16"; do
      set -- $m
      ms=$("$bin" bench "$d/$1" --target cpu --dtype "$2" --warmup 5 --repeats 30 | sed -n 's/.*latency  median \([0-9.]*\) ms.*/\1/p')
      echo "round $r $which $1 $2 $ms"
    done
    line=$("$bin" generate "$d/qwen2.5_1.5b_prefill" "$d/qwen2.5_1.5b_decode" --target cpu --dtype bf16 --max-new-tokens 17 2>&1 | grep "time to first token")
    echo "round $r $which qwen2.5-1.5b bf16: $line"
  done
done
