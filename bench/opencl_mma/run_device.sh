#!/usr/bin/env bash
# On the GPU machine, from a folder holding gemm_mma.cl, mma_bench.cpp, torch_peer.py (and lib/libOpenCL.so.1
# as a fallback ICD loader): build, check, time, then the PyTorch peer. Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/mma-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$OUT/gpu.txt"
if ! g++ -std=c++20 -O2 -fopenmp mma_bench.cpp -o /tmp/mma_bench -lOpenCL 2> "$OUT/build_host.log"; then
  echo "link with -lOpenCL failed; trying the carried loader"; cat "$OUT/build_host.log" | tail -5
  export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  g++ -std=c++20 -O2 -fopenmp mma_bench.cpp -o /tmp/mma_bench "$PWD/lib/libOpenCL.so.1" || exit 1
fi
mkdir -p /tmp/ptx
timeout 200 /tmp/mma_bench gemm_mma.cl /tmp/ptx 2>&1 | tee "$OUT/mma_bench.log" | grep -E "^(platform|device|driver|OpenCL C|local mem|compute|--- build|PTX)|error|Used [0-9]+ registers.*smem" ; echo "mma_bench exit ${PIPESTATUS[0]}"
tar czf "$OUT/ptx.tgz" -C /tmp ptx
# Hardware counters (stall reasons, shared-memory bank conflicts) of the padded and the swizzled
# 128x128 kernels at 4096^3, if ncu can see OpenCL launches (clocks left alone).
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  for v in v3_cpa_128x128_s2_w8 s1_swz_128x128_k32_s2; do
    MMA_ONLY=$v MMA_SHAPE=4096 MMA_REPS=1 timeout 80 "$NCU" --clock-control none --kernel-name gemm_mma --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis_Tables \
      /tmp/mma_bench gemm_mma.cl >> "$OUT/ncu.txt" 2>&1; echo "ncu $v exit $?"
  done
fi
PYTHONUNBUFFERED=1 timeout 60 python3 torch_peer.py > "$OUT/torch_peer.log" 2>&1; echo "torch_peer exit $?"
echo; echo "== results (MxKxN, variant, splitK, rel_l2, max_rel, checked, unwritten, ms, TFLOP/s) =="
grep "^RESULT" "$OUT/mma_bench.log" | sort -k2,2 -k10,10nr | awk '{ if (n[$2]++ < 8) printf "%s %s %s %s %s %s %s %s %s %s\n",$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}' | (column -t 2>/dev/null || cat)
echo "== 4096^3, every variant (variant, ms, TFLOP/s, check) ==" 
grep "^RESULT 4096" "$OUT/mma_bench.log" | sort -k10,10nr | awk '{print $3, $9, $10, $11}' 
grep "^BEST\|^rows" "$OUT/mma_bench.log"
cat "$OUT/torch_peer.log"
