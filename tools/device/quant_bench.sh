#!/usr/bin/env bash
# Issue 37 on the GPU machine, in one call: build the CLI and the OpenCL tests (GCC 13), run the
# q8_0/q4_0 kernel tests on the GPU, generate --check Qwen2.5-1.5B with q8 and q4 weights, profile
# the bf16 and q4 decode steps, then bench-llm bf16, q8, q4 and bf16 again, alternating, on the
# same GPU, for each NPUSIM_OPENCL_PERSISTENT value in PERSIST (default "auto stages"; auto =
# unset), and PyTorch's minimal decode step (CUDA graph) last.
#   source .devdeps/device-env.sh && tools/device/quant_bench.sh     carry: [".devdeps"]
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
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
timeout ${TEST_TIMEOUT:-240} build-q/tests/npusim_opencl_tests --gtest_filter='OpenCLGemvQ.*:OpenCLQuantizedLinear.*:OpenCLPersistent.*' > "$R/tests.log" 2>&1 || echo "tests: exit $? (124: over ${TEST_TIMEOUT:-240} s)"; grep -E '^\[ +(OK|FAILED|RUN) ' "$R/tests.log" | tail -3
grep -E '^\[  (PASSED|FAILED)|FAILED  \]|matrix kernels on' "$R/tests.log"
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
POS=${POSITIONS:-128,1024}
for w in q4 q8; do
  timeout 150 build-q/npusim generate $P $D --check --target opencl --dtype bf16 --weights-dtype $w > "$R/check_$w.log" 2>&1
  echo "check $w: $(grep -E 'greedy tokens|^PASS|^FAIL|rror' "$R/check_$w.log" | tr '\n' ' ' | cut -c1-300)"
done
# Device time per kernel of a decode step, launch by launch (profiling queue: each launch timed by
# its events), and the host's enqueue time per run (NPUSIM_OPENCL_STATS).
for w in bf16 q4; do
  wd=()
  [[ $w == q* ]] && wd=(--weights-dtype $w)
  NPUSIM_OPENCL_STATS=1 timeout 150 build-q/npusim generate $P $D --target opencl --dtype bf16 "${wd[@]}" --max-new-tokens 4 --profile --trace "$R/trace_$w.json" \
    > "$R/profile_$w.log" 2>&1
  echo "profile $w:"; python3 tools/device/trace_kinds.py "$R/trace_$w.json" | tee -a "$R/kernels.txt" | head -12
  grep -E 'opencl partition' "$R/profile_$w.log"
done
pack() { tar -czf "$OUT/quant.tar.gz" -C "$OUT" --exclude='trace_*.json' quant; }  # after each run: a call cut short keeps what it has
pack
for pv in ${PERSIST:-auto stages}; do
  ws=(bf16 q8 q4 bf16b)
  [[ $pv != auto ]] && ws=(bf16 q4)  # (the other modes: the two that say most, within one call's time)
  for w in "${ws[@]}"; do
    wd=()
    [[ $w == q* ]] && wd=(--weights-dtype $w)
    tag=${w}_p$pv
    ( [[ $pv != auto ]] && export NPUSIM_OPENCL_PERSISTENT=$pv
      NPUSIM_OPENCL_STATS=1 timeout 150 build-q/npusim bench-llm $P $D --target opencl --dtype bf16 "${wd[@]}" --positions "$POS" --repeats 20 --json "$R/bench_$tag.json" ) \
      > "$R/bench_$tag.log" 2>&1
    echo "bench $tag:"; grep -E '^ +[0-9]+ |weights read|first token|opencl partition \(2|rror' "$R/bench_$tag.log" | cut -c1-220 | head -8
    pack
  done
done
timeout 300 python3 bench/torch_peer.py minimal > "$R/torch.log" 2>&1; grep PEER "$R/torch.log"
echo "total: $(( $(date +%s) - t0 )) s"
rm -f "$R"/trace_*.json
tar -czf "$OUT/quant.tar.gz" -C "$OUT" quant
