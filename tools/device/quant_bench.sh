#!/usr/bin/env bash
# Issue 37 on the GPU machine, in one call: build the CLI and the OpenCL tests (GCC 13), run the
# q8_0/q4_0 kernel tests on the GPU, generate --check Qwen2.5-1.5B with q8 and q4 weights (with a
# profile of the q4 decode step), then bench-llm bf16, q8, q4 and bf16 again, alternating, on the
# same GPU.   source .devdeps/device-env.sh && tools/device/quant_bench.sh     carry: [".devdeps"]
# Results in $OUT/quant.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-quant}
R=$OUT/quant
mkdir -p "$R"
t0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; g++ --version | head -1; } > "$R/machine.txt"
cat "$R/machine.txt"
cmake -S . -B build-q -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_WERROR=ON > "$R/configure.log" 2>&1 || { tail -30 "$R/configure.log"; exit 1; }
if ! cmake --build build-q -j"$(nproc)" --target npusim_cli npusim_opencl_tests > "$R/build.log" 2>&1; then
  grep -E 'error|warning' "$R/build.log" | head -30
  exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s"
build-q/tests/npusim_opencl_tests --gtest_filter='OpenCLGemvQ.*:OpenCLQuantizedLinear.*' > "$R/tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED)|FAILED  \]|matrix kernels on' "$R/tests.log"
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
for w in q4 q8; do
  prof=()
  [[ $w == q4 ]] && prof=(--profile)
  build-q/npusim generate $P $D --check --target opencl --dtype bf16 --weights-dtype $w "${prof[@]}" > "$R/check_$w.log" 2>&1
  echo "check $w: $(grep -E 'greedy tokens|^PASS|^FAIL' "$R/check_$w.log" | tr '\n' ' ')"
done
# Device time per kernel of a decode step (profiling queue: each launch timed by its events), and
# the host's enqueue time per run (NPUSIM_OPENCL_STATS).
for w in bf16 q8 q4; do
  wd=()
  [[ $w == q* ]] && wd=(--weights-dtype $w)
  NPUSIM_OPENCL_STATS=1 build-q/npusim generate $P $D --target opencl --dtype bf16 "${wd[@]}" --max-new-tokens 4 --profile --trace "$R/trace_$w.json" \
    > "$R/profile_$w.log" 2>&1
  python3 tools/device/trace_kinds.py "$R/trace_$w.json" | tee -a "$R/kernels.txt" | head -12
  grep -E 'opencl partition' "$R/profile_$w.log"
done
NPUSIM_OPENCL_STATS=1 build-q/npusim bench-llm $P $D --target opencl --dtype bf16 --weights-dtype q4 --positions 128 --repeats 20 --no-check 2>&1 |
  grep -E 'opencl partition|^ +128'
for w in bf16 q8 q4 bf16b; do
  wd=()
  [[ $w == q* ]] && wd=(--weights-dtype $w)
  build-q/npusim bench-llm $P $D --target opencl --dtype bf16 "${wd[@]}" --positions 128,1024 --repeats 20 --json "$R/bench_$w.json" > "$R/bench_$w.log" 2>&1
  echo "bench $w:"; grep -E 'step|floor|prefill|first token' "$R/bench_$w.log" | head -12
done
echo "total: $(( $(date +%s) - t0 )) s"
rm -f "$R"/trace_*.json
tar -czf "$OUT/quant.tar.gz" -C "$OUT" quant
