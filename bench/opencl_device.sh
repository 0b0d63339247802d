#!/usr/bin/env bash
# The OpenCL target on a GPU machine, in one go: correctness on every fixture (op cases at f32 and
# f16, ResNet-18/50 at f32 and f16, Qwen2 tiny and Qwen2.5-1.5B at f32/bf16 prefill + 8 decode
# steps), then timings next to PyTorch on the same GPU (bench/torch_peer.py). Logs go to $OUT;
# the last lines are a summary table.
#   bench/opencl_device.sh [path/to/npusim]     (default: devbin/npusim, else builds one)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/npusim-device}
mkdir -p "$OUT"
SIDE=${SIDE:-/tmp/npusim-device-side}  # logs that need not come back (all of them are in the console output)
mkdir -p "$SIDE"
D=tests/data
export LD_LIBRARY_PATH="$PWD/devbin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
export NPUSIM_OPENCL_CACHE="$OUT/../npusim-cl-cache"
BIN=${1:-devbin/npusim}
if ! "$BIN" --version >/dev/null 2>&1; then
  echo "no usable $BIN; building"
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DNPUSIM_NATIVE=OFF -DNPUSIM_BUILD_TESTS=OFF -DNPUSIM_BUILD_BENCH=OFF \
        -DNPUSIM_BUILD_EXAMPLES=OFF -DOpenCL_LIBRARY="$PWD/devbin/libOpenCL.so.1" > "$OUT/build.log" 2>&1
  cmake --build build-dev --target npusim_cli -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  BIN=build-dev/npusim
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
"$BIN" devices | tee "$SIDE/devices.txt"
GPU=$(head -1 "$OUT/gpu.txt" | cut -d, -f1)

pass=0; fail=0; failed=""
check() {  # name, command...
  local name=$1; shift
  if "$@" >> "$OUT/correctness.log" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); failed="$failed $name"; fi
}
t0=$(date +%s)
for c in $D/ops/*; do
  n=$(basename "$c")
  check "$n/f32" "$BIN" run "$c" --target opencl --dtype f32
  check "$n/f16" "$BIN" run "$c" --target opencl --dtype f16
done
ops_pass=$pass; ops_fail=$fail
for m in resnet18 resnet50; do
  check "$m/f32" "$BIN" run $D/models/$m --target opencl --dtype f32
done
check "resnet18/f16" "$BIN" run $D/models/resnet18 --target opencl --dtype f16 --tol 0.01
check "resnet50/f16" "$BIN" run $D/models/resnet50 --target opencl --dtype f16 --tol 0.05
check "qwen2_tiny/f32" "$BIN" generate $D/models/qwen2_tiny_prefill $D/models/qwen2_tiny_decode --check --target opencl --dtype f32
check "qwen2_tiny/bf16" "$BIN" generate $D/models/qwen2_tiny_prefill $D/models/qwen2_tiny_decode --check --target opencl --dtype bf16 --min-token-matches 8
echo "correctness: $pass passed, $fail failed ($(( $(date +%s) - t0 )) s)${failed:+; failed:$failed}" | tee "$SIDE/correctness.txt"
grep -E "^(PASS|FAIL)|rel_l2|top-5|greedy" "$OUT/correctness.log" | tail -40

# Qwen2.5-1.5B bf16: prefill + 8 teacher-forced decode steps, with a profile and trace of the decode steps.
"$BIN" generate $D/models/qwen2.5_1.5b_prefill $D/models/qwen2.5_1.5b_decode --check --target opencl --dtype bf16 \
  --profile --trace "$OUT/qwen15_decode_trace.json" 2>&1 | grep -v "loading weights" | tee "$OUT/qwen15_generate.log"
q15=$(grep -E "^(PASS|FAIL)$" "$OUT/qwen15_generate.log" | tail -1)
# Decode step latency: 64 free-running steps (mean and median printed by generate).
"$BIN" generate $D/models/qwen2.5_1.5b_prefill $D/models/qwen2.5_1.5b_decode --target opencl --dtype bf16 --max-new-tokens 65 2>&1 \
  | grep -v "loading weights" | tee "$OUT/qwen15_decode_time.log" | tail -3
"$BIN" run $D/models/qwen2.5_1.5b_prefill --target opencl --dtype bf16 --time 10 2>&1 | grep -v "loading weights" | tee "$SIDE/qwen15_prefill_time.log" | tail -3
"$BIN" run $D/models/resnet50 --target opencl --dtype f16 --tol 0.05 --time 200 2>&1 | tee "$SIDE/resnet50_time.log" | tail -2
"$BIN" run $D/models/resnet50 --target opencl --dtype f16 --tol 0.05 --profile --runs 20 2>&1 | tee "$OUT/resnet50_profile.log" | tail -25

PYTHONUNBUFFERED=1 timeout 300 python3 bench/torch_peer.py 2>&1 | tee "$OUT/torch_peer.log"

peer() { grep "^PEER $1 " "$OUT/torch_peer.log" | awk '{print $3}'; }
r50=$(grep -o "median [0-9.]* ms" "$SIDE/resnet50_time.log" | awk '{print $2}')
dec=$(grep -o "median [0-9.]* ms" "$OUT/qwen15_decode_time.log" | awk '{print $2}')
pre=$(grep -o "median [0-9.]* ms" "$SIDE/qwen15_prefill_time.log" | awk '{print $2}')
echo
echo "== summary on $GPU =="
cat "$SIDE/correctness.txt"
echo "op fixtures (61 x f32/f16): $ops_pass passed, $ops_fail failed; qwen2.5-1.5b bf16 generate --check: $q15"
printf "%-44s %10s %10s %10s\n" "measurement (median ms)" "npusim" "pytorch" "ratio"
row() { if [ -n "$2" ] && [ -n "$3" ] && [ "$3" != "n/a" ]; then printf "%-44s %10s %10s %9.2fx\n" "$1" "$2" "$3" "$(awk -v a="$3" -v b="$2" 'BEGIN { print a / b }')"; else printf "%-44s %10s %10s\n" "$1" "${2:--}" "${3:--}"; fi; }
row "resnet50 f16 batch 1 (vs eager)" "$r50" "$(peer resnet50_f16_b1_eager)"
row "qwen2.5-1.5b decode step bf16 (vs HF eager)" "$dec" "$(peer qwen15_decode_bf16_kv2048_hf_eager)"
row "  (vs minimal eager)" "$dec" "$(peer qwen15_decode_bf16_kv2048_minimal_eager)"
row "  (vs minimal CUDA graph)" "$dec" "$(peer qwen15_decode_bf16_kv2048_minimal_cudagraph)"
row "qwen2.5-1.5b prefill 128 bf16 (vs HF eager)" "$pre" "$(peer qwen15_prefill128_bf16_eager)"
