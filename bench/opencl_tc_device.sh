#!/usr/bin/env bash
# The OpenCL target's tensor-core path on a GPU machine, in one call (issue 24): builds the CLI, the
# OpenCL tests and the GEMM timer with the machine's compiler; runs the matrix-kernel test and every
# op fixture at f16 on the NVIDIA device; then times the GEMM shapes, ResNet-18/50 f16 and the
# Qwen2.5-1.5B 128-token prefill with the tensor cores and without (NPUSIM_OPENCL_MMA=0), in
# alternating rounds, next to PyTorch on the same GPU. Full logs in $OUT; a summary last.
#   source .devdeps/device-env.sh && bench/opencl_tc_device.sh [STEPS]
# STEPS: any of build,test,gemm,resnet,prefill,check,peer,decode (default: all but decode).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/npusim-device}
mkdir -p "$OUT"
STEPS=${1:-build,test,gemm,resnet,prefill,check,peer}
has() { [[ ",$STEPS," == *",$1,"* ]]; }
D=tests/data/models
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
export NPUSIM_OPENCL_CACHE=/tmp/npusim-cl-cache
BIN=build-dev/npusim
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
if has build; then
  t0=$(date +%s)
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DNPUSIM_NATIVE=OFF -DNPUSIM_BUILD_BENCH=OFF -DNPUSIM_BUILD_EXAMPLES=OFF \
        -DNPUSIM_BUILD_DOC_SNIPPETS=OFF > "$OUT/build.log" 2>&1 &&
    cmake --build build-dev --target npusim_cli npusim_opencl_tests -j"$(nproc)" >> "$OUT/build.log" 2>&1 &&
    g++ -std=c++20 -O2 -Wall -Wextra -Werror -Iinclude -I"$DEVDEPS_PREFIX/include/eigen3" -Ibuild-dev/generated/include \
        bench/opencl_gemm_time.cpp -o build-dev/gemm_time -lOpenCL >> "$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s ($(g++ --version | head -1))"
fi
NPUSIM_OPENCL_MMA=1 "$BIN" devices 2>&1 | tee "$OUT/devices.txt"
if has test; then
  t0=$(date +%s)
  NPUSIM_OPENCL_MMA=1 build-dev/tests/npusim_opencl_tests --gtest_filter='OpenCLGemm.*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*' > "$OUT/tests.log" 2>&1
  echo "tests (OpenCLGemm + 61 op fixtures at f16, tensor cores): rc $? in $(( $(date +%s) - t0 )) s: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E 'FAILED|Failure|rel_l2|matrix kernels' "$OUT/tests.log" | head -20
fi
if has gemm; then
  for mma in 1 0; do NPUSIM_OPENCL_MMA=$mma build-dev/gemm_time 2>&1 | tee -a "$OUT/gemm.log"; done
  PYTHONUNBUFFERED=1 timeout 180 python3 bench/opencl_mma/torch_peer.py 2>&1 | tee -a "$OUT/gemm.log"
fi
if has resnet; then
  for round in 1 2; do
    for mma in 1 0; do
      for m in resnet18 resnet50; do
        tol=0.05; [ $m = resnet18 ] && tol=0.01
        echo "== round $round $m f16 mma=$mma" >> "$OUT/resnet.log"
        NPUSIM_OPENCL_MMA=$mma "$BIN" run $D/$m --target opencl --dtype f16 --tol $tol --time 200 >> "$OUT/resnet.log" 2>&1
        echo "round $round $m mma=$mma: $(tail -3 "$OUT/resnet.log" | grep -oE '(PASS|FAIL)|median [0-9.]+ ms' | tr '\n' ' ')"
      done
    done
  done
  NPUSIM_OPENCL_MMA=1 "$BIN" run $D/resnet50 --target opencl --dtype f16 --tol 0.05 --profile --runs 20 > "$OUT/resnet50_profile.log" 2>&1
  tail -30 "$OUT/resnet50_profile.log"
fi
if has prefill; then
  for mma in 1 0 1; do
    NPUSIM_OPENCL_MMA=$mma "$BIN" run $D/qwen2.5_1.5b_prefill --target opencl --dtype bf16 --time 10 2>&1 | grep -v "loading weights" > "$OUT/prefill_$mma.log"
    echo "prefill 128 bf16 mma=$mma: $(grep -oE '(PASS|FAIL)|rel_l2 [0-9.e+-]+|median [0-9.]+ ms' "$OUT/prefill_$mma.log" | tr '\n' ' ')"
  done
  NPUSIM_OPENCL_MMA=1 "$BIN" run $D/qwen2.5_1.5b_prefill --target opencl --dtype bf16 --profile --runs 3 2>&1 | grep -v "loading weights" > "$OUT/prefill_profile.log"
  tail -30 "$OUT/prefill_profile.log"
fi
if has check; then
  NPUSIM_OPENCL_MMA=1 "$BIN" generate $D/qwen2.5_1.5b_prefill $D/qwen2.5_1.5b_decode --check --target opencl --dtype bf16 2>&1 | grep -v "loading weights" | tee "$OUT/qwen15_check.log" | tail -12
fi
if has decode; then
  "$BIN" generate $D/qwen2.5_1.5b_prefill $D/qwen2.5_1.5b_decode --target opencl --dtype bf16 --max-new-tokens 65 2>&1 | grep -v "loading weights" | tail -4
fi
if has peer; then
  PYTHONUNBUFFERED=1 timeout 400 python3 bench/torch_peer.py 2>&1 | tee "$OUT/torch_peer.log" | grep PEER
fi
