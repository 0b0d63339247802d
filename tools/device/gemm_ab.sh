#!/usr/bin/env bash
# Issue 43 on the GPU machine, in one call: the tensor-core GEMM of this tree against the one of
# OLD (a source tree, e.g. the parent commit's), side by side. Builds both CLIs and GEMM timers
# (GCC 13) and this tree's OpenCL tests; runs the matrix-kernel test and the half-precision op
# fixtures on the tensor cores; times the prefill's GEMM shapes (bench/opencl_gemm_time.cpp: old,
# new, and new with NPUSIM_OPENCL_GEMM_FILL=1 and 4, two alternating rounds) next to torch.matmul;
# then the Qwen2.5-1.5B prefill (`run --time`, bench-llm's time to first token, a profile by kernel
# kind), generate --check, ResNet-18/50 f16, old and new alternating, and PyTorch's peers last.
#   source .devdeps/device-env.sh && OLD=.old-main tools/device/gemm_ab.sh     carry: [".devdeps", ".old-main"]
# Env: STEPS (any of tests,conformance,gemm,tiles,prefill,free,records,resnet,torch,torchgemm;
# default tests,gemm,prefill,resnet,torch,torchgemm), SHAPES (MxKxN list), ROUNDS (ResNet rounds,
# default 2), GEMM_VARIANTS (of the gemm step: any of old, new, fill1, fill4; default all four). conformance: the OpenCL conformance suite at f16 and bf16; free: generate from a
# short prompt, old and new (the same tokens); records: `npusim bench --json` of the prefill `run`
# and of ResNet-50/18 f16 (h200_*.json, docs/bench).
# Results in $OUT/gemm_ab.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-gemm}
R=$OUT/gemm_ab
mkdir -p "$R"
t0=$(date +%s)
STEPS=${STEPS:-tests,gemm,prefill,resnet,torch,torchgemm}
has() { [[ ",$STEPS," == *",$1,"* ]]; }
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
export NPUSIM_OPENCL_CACHE=/tmp/npusim-cl-cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; g++ --version | head -1; } > "$R/machine.txt"
cat "$R/machine.txt"
OLD=${OLD:?OLD=<source tree to compare with>}
nproc2=$(( $(nproc) / 2 ))
build() {  # build SRC DIR TARGETS...
  local src=$1 dir=$2
  shift 2
  local own=ON
  [[ $src != . ]] && own=OFF  # an OLD tree travels without its tests; warnings are errors in this one (GCC 13)
  cmake -S "$src" -B "$dir" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_BUILD_EXAMPLES=OFF -DNPUSIM_BUILD_BENCH=OFF \
    -DNPUSIM_BUILD_TESTS=$own -DNPUSIM_WERROR=$own \
    -DNPUSIM_BUILD_DOC_SNIPPETS=OFF > "$R/configure_$(basename "$dir").log" 2>&1 &&
    cmake --build "$dir" -j"$nproc2" --target "$@" > "$R/build_$(basename "$dir").log" 2>&1 &&
    { [[ -x $dir/gemm_time ]] || g++ -std=c++20 -O2 -DMSGPACK_NO_BOOST -I"$src/include" -I"$DEVDEPS_PREFIX/include/eigen3" -I"$dir/generated/include" "$src/bench/opencl_gemm_time.cpp" \
      -o "$dir/gemm_time" -lOpenCL >> "$R/build_$(basename "$dir").log" 2>&1; }
}
tests=()
has tests && tests=(npusim_opencl_tests)
has conformance && tests+=(npusim_conformance_tests)
build . build-g npusim_cli "${tests[@]}" &
build "$OLD" build-old npusim_cli &
wait
[[ -x build-g/gemm_time && -x build-old/gemm_time ]] || { tail -30 "$R"/build_*.log; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
bin() { if [[ $1 == old ]]; then echo "build-old/$2"; else echo "build-g/$2"; fi; }  # bin VERSION TOOL
pack() { tar -czf "$OUT/gemm_ab.tar.gz" -C "$OUT" --exclude='trace*.json' gemm_ab; }
if has tests; then
  timeout 300 build-g/tests/npusim_opencl_tests \
    --gtest_filter='OpenCLGemm.*:OpenCLModels.*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*conv*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*linear*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*matmul*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/bmm:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*attention*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/silu_gate_mlp:OpenCLQuantizedLinear.*' \
    > "$R/tests.log" 2>&1
  echo "tests: rc $? $(grep -E '^\[  (PASSED|FAILED) |matrix kernels on' "$R/tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' "$R/tests.log" | head -10
fi
SHAPES=${SHAPES:-128x1536x1536 128x1536x256 128x1536x8960 128x8960x1536 128x1536x151936 4096x4096x4096}
if has gemm; then
  for round in 1 2; do
    for v in ${GEMM_VARIANTS:-old new fill1 fill4}; do
      env=()
      [[ $v == fill* ]] && env=(NPUSIM_OPENCL_GEMM_FILL=${v#fill})
      echo "== round $round $v" >> "$R/gemm.log"
      env "${env[@]}" timeout 120 "$(bin $v gemm_time)" $SHAPES 2>&1 | sed "s/^GEMM/GEMM $v r$round/" >> "$R/gemm.log"
    done
  done
  grep '^GEMM' "$R/gemm.log"
  pack
fi
# tiles: the new GEMM on each tensor-core tile (NPUSIM_OPENCL_GEMM_TILE) against its own choice.
if has tiles; then
  for round in 1 2; do
    for v in auto 128x128 64x128; do
      env=()
      [[ $v != auto ]] && env=(NPUSIM_OPENCL_GEMM_TILE=$v)
      env "${env[@]}" timeout 120 build-g/gemm_time $SHAPES 2>&1 | grep '^GEMM' | sed "s/^GEMM/GEMM tile-$v r$round/" >> "$R/tiles.log"
    done
  done
  cat "$R/tiles.log"
  pack
fi
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
if has prefill; then
  for round in 1 2; do
    for v in old new; do
      b=$(bin $v npusim)
      timeout 120 "$b" run $P --target opencl --dtype bf16 --time 10 > "$R/run_${v}_$round.log" 2>&1
      NPUSIM_OPENCL_STATS=1 timeout 120 "$b" bench-llm $P $D --target opencl --dtype bf16 --positions 128 --repeats 10 --json "$R/bench_${v}_$round.json" > "$R/bench_${v}_$round.log" 2>&1
      echo "prefill $v r$round: run $(grep -E 'latency|error' "$R/run_${v}_$round.log" | tr '\n' ' ' | cut -c1-160) | $(grep -E 'first token|error' "$R/bench_${v}_$round.log" | tr '\n' ' ' | cut -c1-160)"
    done
  done
  for v in old new; do
    b=$(bin $v npusim)
    timeout 120 "$b" run $P --target opencl --dtype bf16 --profile --runs 3 --trace "$R/trace_$v.json" > "$R/profile_$v.log" 2>&1
    echo "profile $v:"; python3 tools/device/trace_kinds.py "$R/trace_$v.json" 2>&1 | tee "$R/kernels_$v.txt" | head -6
  done
  timeout 200 build-g/npusim generate $P $D --check --target opencl --dtype bf16 > "$R/check.log" 2>&1
  echo "check: $(grep -E 'greedy tokens|^PASS|^FAIL|rror' "$R/check.log" | tr '\n' ' ' | cut -c1-300)"
  pack
fi
if has conformance; then
  timeout 400 build-g/tests/npusim_conformance_tests --gtest_filter='Targets/Conformance.*/opencl_float16:Targets/Conformance.*/opencl_bfloat16' \
    > "$R/conformance.log" 2>&1
  echo "conformance: rc $? $(grep -E '^conformance:|^\[  (PASSED|FAILED) ' "$R/conformance.log" | tr '\n' ' ')"
  grep -E 'Failure|on opencl at' "$R/conformance.log" | head -10
fi
if has free; then
  for v in old new; do
    timeout 200 "$(bin $v npusim)" generate $P $D --target opencl --dtype bf16 --prompt-ids 9707,11,1879,374,264 --max-new-tokens 16 > "$R/free_$v.log" 2>&1
    echo "free $v: $(grep -E '^prefill:|^tokens:|time to first|rror' "$R/free_$v.log" | tr '\n' ' ' | cut -c1-300)"
  done
fi
if has records; then
  timeout 200 build-g/npusim bench $P --target opencl --dtype bf16 --repeats 20 --json "$R/h200_prefill128_bf16.json" > "$R/record_prefill.log" 2>&1
  for m in resnet50 resnet18; do
    timeout 200 build-g/npusim bench $M/$m --target opencl --dtype f16 --repeats 200 --json "$R/h200_${m}_f16.json" > "$R/record_$m.log" 2>&1
  done
  grep -hE 'latency|throughput|rror' "$R"/record_*.log
  pack
fi
if has resnet; then
  for round in $(seq "${ROUNDS:-2}"); do
    for v in old new; do
      b=$(bin $v npusim)
      for m in resnet18 resnet50; do
        timeout 120 "$b" run $M/$m --target opencl --dtype f16 --time 200 > "$R/${m}_${v}_$round.log" 2>&1
        echo "$m $v r$round: $(grep -E 'latency|error' "$R/${m}_${v}_$round.log" | tr '\n' ' ' | cut -c1-160)"
      done
    done
  done
  pack
fi
if has torchgemm; then
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/opencl_mma/torch_peer.py > "$R/torch_gemm.log" 2>&1; grep PEER "$R/torch_gemm.log"
fi
if has torch; then
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/torch_peer.py resnet hf > "$R/torch.log" 2>&1; grep PEER "$R/torch.log"
fi
echo "total: $(( $(date +%s) - t0 )) s"
pack
