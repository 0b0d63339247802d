#!/usr/bin/env bash
# Qwen2.5-1.5B decode step time vs cache position on the OpenCL target of a GPU machine (the curve
# of docs/benchmarks.md), the same step with the 2048-entry cache, and the f32 free-running greedy
# generation against the fixture's 9 tokens. Logs, JSON and SVG go to $OUT.
#   bench/llm_curve_device.sh [path/to/npusim]      (default devbin/npusim, as bench/opencl_device.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/npusim-device}
mkdir -p "$OUT"
D=tests/data/models
export LD_LIBRARY_PATH="$PWD/devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
export NPUSIM_OPENCL_CACHE="$OUT/../npusim-cl-cache"
BIN=${1:-devbin/npusim}
PIN=${PIN:-}  # e.g. "taskset -c 0-7" to keep the host side on some cores
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$PIN "$BIN" bench-llm $D/qwen2.5_1.5b_prefill $D/qwen2.5_1.5b_decode_c32k --target opencl --dtype bf16 --repeats 5 \
  --json "$OUT/qwen15_c32k_opencl.json" --svg "$OUT/qwen15_c32k_opencl.svg" 2>&1 | grep -v "loading weights"
$PIN "$BIN" bench-llm $D/qwen2.5_1.5b_prefill $D/qwen2.5_1.5b_decode --target opencl --dtype bf16 --repeats 5 --positions 1,64,1024,2047 \
  --json "$OUT/qwen15_c2k_opencl.json" 2>&1 | grep -v "loading weights"
$PIN "$BIN" generate $D/qwen2.5_1.5b_prefill $D/qwen2.5_1.5b_decode --target opencl --dtype f32 --max-new-tokens 9 2>&1 | grep -v "loading weights"
echo "fixture greedy tokens: $(python3 -c "import json;print(*json.load(open('$D/qwen2.5_1.5b_decode/meta.json'))['greedy_tokens'])")"
