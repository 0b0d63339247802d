#!/usr/bin/env bash
# npusim's CPU target next to the CPU peers, side by side in one run on this machine (the host is
# shared: compare within a round). Each round runs, one process at a time: ONNX Runtime f32,
# PyTorch bf16 channels-last, npusim cpu f32 / bf16 / f16, for ResNet-18 and ResNet-50, batch 1,
# 2 threads. Peers as set up in ../shared/peers/README.md (Debian's python3-torch and
# python3-torchvision, onnxruntime-node from npm, ONNX files from export_onnx.py).
#   bench/cpu_peers.sh [ROUNDS] [OUT_DIR]
#     PEERS=../shared/peers ONNX=/tmp/onnx ORT_MODULES=/tmp/ortnode/node_modules NPUSIM=build/npusim
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
OUT=${2:-/tmp/npusim-cpu-peers}
PEERS=${PEERS:-../shared/peers} ONNX=${ONNX:-/tmp/onnx} NM=${ORT_MODULES:-/tmp/ortnode/node_modules} BIN=${NPUSIM:-build/npusim}
mkdir -p "$OUT"
: > "$OUT/results.jsonl"
med() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.readlines()[-1])['$1'])"; }
for r in $(seq 1 "$ROUNDS"); do
  for m in resnet18 resnet50; do
    o=$(NODE_PATH="$NM" node "$PEERS/ort_bench.js" "$ONNX/$m.onnx" 1 2 5 30 | med median_ms)
    t=$(OMP_NUM_THREADS=2 /usr/bin/python3 "$PEERS/torch_bench.py" $m bf16 1 2 --layout nhwc --warmup 5 --iters 30 | med median_ms)
    line="{\"round\": $r, \"model\": \"$m\", \"ort_f32_ms\": $o, \"torch_bf16_nhwc_ms\": $t"
    for dt in f32 bf16 f16; do
      "$BIN" bench tests/data/models/$m --target cpu --dtype $dt --warmup 5 --repeats 30 --json "$OUT/$m-$dt.json" > /dev/null
      line="$line, \"npusim_cpu_${dt}_ms\": $(/usr/bin/python3 -c "import json; print(json.load(open('$OUT/$m-$dt.json'))['latency']['median_ms'])")"
    done
    echo "$line}" | tee -a "$OUT/results.jsonl"
  done
done
/usr/bin/python3 - "$OUT/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ["ort_f32_ms", "torch_bf16_nhwc_ms", "npusim_cpu_f32_ms", "npusim_cpu_bf16_ms", "npusim_cpu_f16_ms"]
print("median over rounds (ms)   " + "  ".join(f"{k:>20s}" for k in keys))
for m in ("resnet18", "resnet50"):
    v = {k: statistics.median(r[k] for r in rows if r["model"] == m) for k in keys}
    print(f"{m:25s} " + "  ".join(f"{v[k]:20.2f}" for k in keys))
    print(f"{'':25s} npusim f32 / ORT f32 = {v['npusim_cpu_f32_ms'] / v['ort_f32_ms']:.2f}x time; npusim bf16 / PyTorch bf16 = {v['npusim_cpu_bf16_ms'] / v['torch_bf16_nhwc_ms']:.2f}x time")
PY
