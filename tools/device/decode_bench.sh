#!/usr/bin/env bash
# Issue 38 on the GPU machine, in one call: the launch/grid-barrier probe, the CLI built (GCC 13),
# bench-llm's bf16 decode step (and q8/q4 with QUANT=1) with NPUSIM_OPENCL_STATS, a profiled
# generate, and PyTorch's minimal decode step (eager and CUDA graph) in the same call.
#   source .devdeps/device-env.sh && tools/device/decode_bench.sh      carry: [".devdeps"]
# Env: POSITIONS (default 128,1024), C32K=1 adds the 32768-entry cache at 32767, PROBE=0 skips the
# probe, QUANT=1 adds q8/q4, TESTS=1 runs the OpenCL tests first, TORCH=0 skips the PyTorch peer,
# PERSIST and OLD below, PTXAS=1 the kernels' registers (ptxas_regs.sh); BENCH_ARGS are added to every bench-llm (e.g. --no-check). Results in $OUT/decode.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-decode}
R=$OUT/decode
mkdir -p "$R"
t0=$(date +%s)
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; g++ --version | head -1; } > "$R/machine.txt"
cat "$R/machine.txt"
if [[ ${PROBE:-1} == 1 ]]; then
  g++ -O2 -std=c++17 tools/device/launch_probe/probe.cpp -lOpenCL -o "$R/probe" && timeout 120 "$R/probe" NVIDIA > "$R/probe.log" 2>&1
  grep -v extensions "$R/probe.log"; grep -o 'cl_khr_command_buffer[a-z_]*' "$R/probe.log" | sort -u
fi
cmake -S . -B build-d -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_WERROR=ON > "$R/configure.log" 2>&1 || { tail -30 "$R/configure.log"; exit 1; }
# TESTS=1: the OpenCL tests too (TEST_FILTER, gtest syntax), run on the GPU before the benches.
targets=(npusim_cli)
[[ ${TESTS:-0} == 1 ]] && targets+=(npusim_opencl_tests)
if ! cmake --build build-d -j"$(nproc)" --target "${targets[@]}" > "$R/build.log" 2>&1; then
  grep -E 'error|warning' "$R/build.log" | head -30
  exit 1
fi
if [[ -n ${OLD:-} ]]; then
  cmake -S "$OLD" -B build-old -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_BUILD_TESTS=OFF -DNPUSIM_BUILD_EXAMPLES=OFF \
    -DNPUSIM_BUILD_BENCH=OFF -DNPUSIM_BUILD_DOC_SNIPPETS=OFF > "$R/configure_old.log" 2>&1 &&
    cmake --build build-old -j"$(nproc)" --target npusim_cli > "$R/build_old.log" 2>&1 || { tail -20 "$R/build_old.log"; exit 1; }
fi
echo "build: $(( $(date +%s) - t0 )) s"
if [[ ${TESTS:-0} == 1 ]]; then
  timeout 400 build-d/tests/npusim_opencl_tests --gtest_filter="${TEST_FILTER:-OpenCL*}" > "$R/tests.log" 2>&1
  echo "tests: $(grep -E '^\[  (PASSED|FAILED) ' "$R/tests.log" | tr '\n' ' ') ($(( $(date +%s) - t0 )) s)"; grep -E '^\[  FAILED|Failure' "$R/tests.log" | head -10
fi
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
POS=${POSITIONS:-128,1024}
NPUSIM_OPENCL_STATS=1 build-d/npusim generate $P $D --check --target opencl --dtype bf16 > "$R/check.log" 2>&1
echo "check: $(grep -E 'greedy tokens|^PASS|^FAIL|error' "$R/check.log" | tr '\n' ' ')"
# with_mode M CMD...: CMD with mode M: "old" (the OLD build), "auto" (defaults), a
# NPUSIM_OPENCL_PERSISTENT value (on, off, stages, a number), nopat=NAMES (--no-pattern NAMES, the
# fusion patterns left out), or VAR=VALUE (an environment knob); several joined by '+'
# (on+NPUSIM_OPENCL_PREFETCH=8).
with_mode() {
  local m=$1 bin=build-d/npusim
  shift
  [[ $m == old ]] && bin=build-old/npusim
  (
    IFS=+ read -ra parts <<< "$m"
    local extra=()
    for p in "${parts[@]}"; do
      if [[ $p == nopat=* ]]; then extra+=(--no-pattern "${p#nopat=}")
      elif [[ $p == *=* ]]; then export "${p?}"; elif [[ $p != auto && $p != old ]]; then export NPUSIM_OPENCL_PERSISTENT=$p; fi
    done
    NPUSIM_OPENCL_STATS=1 "$bin" "$@" "${extra[@]}"
  )
}
# PROFILES: the modes profiled (generate --profile, kernels by kind per step).
if [[ ${PROFILE:-1} == 1 ]]; then
  for pm in ${PROFILES:-auto}; do
    with_mode "$pm" generate $P $D --target opencl --dtype bf16 --max-new-tokens 4 --profile --trace "$R/trace.json" > "$R/profile_${pm//[^a-zA-Z0-9]/_}.log" 2>&1
    echo "profile $pm:"; python3 tools/device/trace_kinds.py "$R/trace.json" > "$R/kernels_${pm//[^a-zA-Z0-9]/_}.txt" 2>&1; head -12 "$R/kernels_${pm//[^a-zA-Z0-9]/_}.txt"
    grep -E 'opencl partition \(1|total kernels' "$R/profile_${pm//[^a-zA-Z0-9]/_}.log" | cut -c1-200
  done
fi
# PERSIST: the NPUSIM_OPENCL_PERSISTENT values to compare (off, on, stages, or a number of
# work-groups; "auto" = unset), in this order; OLD=<dir>: also the npusim built from that source
# tree ("old"). With QUANT=1, q8 and q4 run after bf16 in the "auto" mode only. A mode written
# s4:MODE runs MODE as 4 pipeline stages on this one GPU (--stages 4), to time the stage boundaries.
n=0
for pv0 in ${PERSIST:-auto}; do
  pv=${pv0#s4:} sa=() n=$((n + 1))
  [[ $pv0 == s4:* ]] && sa=(--stages 4 --devices NVIDIA,NVIDIA,NVIDIA,NVIDIA)
  ws=(bf16)
  [[ ${QUANT:-0} == 1 && $pv0 == auto ]] && ws=(bf16 q8 q4)
  [[ -n ${QUANT_MODES:-} && " $QUANT_MODES " == *" $pv0 "* ]] && ws=(bf16 q4)
  for w in "${ws[@]}"; do
    wd=()
    [[ $w == q* ]] && wd=(--weights-dtype $w)
    tag=${w}_p${pv0//[^a-zA-Z0-9]/_}_$n
    with_mode "$pv" bench-llm $P $D --target opencl --dtype bf16 "${wd[@]}" "${sa[@]}" --positions "$POS" --repeats 20 ${BENCH_ARGS:-} --json "$R/bench_$tag.json" > "$R/bench_$tag.log" 2>&1
    echo "bench $tag:"; grep -E '^ +[0-9]+ |copy bandwidth|weights read|first token|opencl partition \((1|2)[0-9][0-9] launches|error' "$R/bench_$tag.log" | cut -c1-220 | head -8
  done
done
if [[ ${C32K:-0} == 1 ]]; then
  build-d/npusim bench-llm $P $M/qwen2.5_1.5b_decode_c32k --target opencl --dtype bf16 --positions 32767 --repeats 10 --json "$R/bench_c32k.json" > "$R/bench_c32k.log" 2>&1
  echo "bench c32k:"; grep -E 'step|floor' "$R/bench_c32k.log" | head -6
fi
if [[ ${TORCH:-1} == 1 ]]; then timeout 300 python3 bench/torch_peer.py minimal > "$R/torch.log" 2>&1; grep PEER "$R/torch.log"; fi
# PTXAS=1: registers, stack and spills of every kernel a decode run builds (tools/device/ptxas_regs.sh).
if [[ ${PTXAS:-0} == 1 ]]; then
  tools/device/ptxas_regs.sh build-d/npusim generate $P $D --target opencl --dtype bf16 --max-new-tokens 2 > "$R/ptxas.txt" 2>&1
  grep -E '^(gemv|gemv_rope|attention_dec|rmsnorm|gemm_mma):' "$R/ptxas.txt" | sort -u
fi
echo "total: $(( $(date +%s) - t0 )) s"
rm -f "$R"/trace.json "$R/probe"
tar -czf "$OUT/decode.tar.gz" -C "$OUT" decode
