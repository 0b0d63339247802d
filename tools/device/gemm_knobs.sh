#!/usr/bin/env bash
# Issue 43 on the GPU machine, in one short call: the target's tensor-core GEMM (bench/opencl_gemm_time.cpp)
# under the tuning knobs of cl/gemm.cl (NPUSIM_OPENCL_GEMM_OPTS, NPUSIM_OPENCL_GEMM_FILL), next to the
# standalone kernel of bench/opencl_mma/ (mma_bench, its 64 x 128 and 128 x 128 variants) and torch.matmul,
# on the prefill's shapes. Builds only the two timers (no CMake build: the kernels' header is embedded
# by cmake -P), so it takes a few minutes.
#   source .devdeps/device-env.sh && tools/device/gemm_knobs.sh        carry: [".devdeps"]
# Env: SHAPES (MxKxN list), KNOBS (';'-separated variants, each "name=ENV=VALUE ENV=VALUE"), ROUNDS.
# Results in $OUT/gemm_knobs.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-gemm}
R=$OUT/gemm_knobs
mkdir -p "$R" /tmp/gk/gen
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; g++ --version | head -1; git log -1 --format=%h 2>/dev/null; } > "$R/machine.txt"
cat "$R/machine.txt"
cmake -DOUT=/tmp/gk/gen/npusim/target/opencl/kernels_cl.hpp -DDIR=include/npusim/target/opencl/cl \
  -DNAMES=common,generic,gemm,gemv_q,attention,quant,persistent,moe -P cmake/embed_cl.cmake || exit 1
g++ -std=c++20 -O2 -DMSGPACK_NO_BOOST -Iinclude -I"${DEVDEPS_PREFIX:-/usr}/include/eigen3" -I/tmp/gk/gen bench/opencl_gemm_time.cpp \
  -o /tmp/gk/gemm_time -lOpenCL > "$R/build.log" 2>&1 &
g++ -std=c++20 -O2 -fopenmp bench/opencl_mma/mma_bench.cpp -o /tmp/gk/mma_bench -lOpenCL >> "$R/build.log" 2>&1 &
wait
[[ -x /tmp/gk/gemm_time && -x /tmp/gk/mma_bench ]] || { tail -20 "$R/build.log"; exit 1; }
pack() { tar -czf "$OUT/gemm_knobs.tar.gz" -C "$OUT" gemm_knobs; }
SHAPES=${SHAPES:-128x1536x8960 128x8960x1536 128x1536x1536 128x1536x151936 4096x4096x4096}
# The knobs of the first run (2026-11-28: -DM_MFAST, -DM_EPI2) were removed or became the default;
# add a variant behind a -D switch in cl/gemm.cl and name it here.
KNOBS=${KNOBS:-"default=;fill1=NPUSIM_OPENCL_GEMM_FILL=1;fill4=NPUSIM_OPENCL_GEMM_FILL=4"}
ROUNDS=${ROUNDS:-2}
for round in $(seq 1 "$ROUNDS"); do
  IFS=';' read -ra vs <<< "$KNOBS"
  for v in "${vs[@]}"; do
    name=${v%%=*} envs=${v#*=}
    echo "== round $round $name: $envs" >> "$R/gemm.log"
    env $envs timeout 150 /tmp/gk/gemm_time $SHAPES 2>&1 | sed "s/^GEMM/GEMM $name r$round/" >> "$R/gemm.log"
  done
  pack
done
grep '^GEMM' "$R/gemm.log"
# The standalone kernel (its own shapes, best split per variant).
(cd bench/opencl_mma && MMA_ONLY=${MMA_ONLY:-_cpa_} timeout 240 /tmp/gk/mma_bench gemm_mma.cl > "$R/mma_bench.log" 2>&1)
echo "mma_bench rc $?"
grep "^RESULT" "$R/mma_bench.log" | sort -k2,2 -k10,10nr | awk '{ if (n[$2 $3]++ < 1) print }'
pack
(cd bench/opencl_mma && PYTHONUNBUFFERED=1 timeout 90 python3 torch_peer.py > "$R/torch_peer.log" 2>&1)
echo "torch rc $?"; cat "$R/torch_peer.log" | tail -12
pack
