#!/usr/bin/env bash
# Offline check (no GPU): compile gemm_mma.cl's variants with clang's NVPTX OpenCL target and assemble the
# PTX with ptxas for sm_90 (registers, spills, local-memory size). offline_prelude.cl stands in for the
# work-item builtins NVIDIA's driver provides. clang-15 knows sm_86 at most: the .target line is rewritten.
set -euo pipefail
cd "$(dirname "$0")"; T=$(mktemp -d)
for v in "-DUSE_LDSM=0 -DUSE_CPASYNC=0 -DSTAGES=1 -DBM=64 -DBN=64 -DWM=32 -DWN=32" "-DUSE_LDSM=1 -DUSE_CPASYNC=0 -DSTAGES=2" "-DSWZ=1 -DBK=16 -DSTAGES=5" "-DSWZ=1 -DBK=32 -DSTAGES=3" "-DSWZ=1 -DBK=64 -DSTAGES=2 -DBN=64" "-DSWZ=1 -DBK=16 -DSTAGES=4 -DBN=256 -DWN=64" \
         "-DUSE_LDSM=1 -DUSE_CPASYNC=1 -DSTAGES=3 -DBM=64 -DBN=128 -DWM=32 -DWN=64"; do
  cat offline_prelude.cl gemm_mma.cl > "$T/all.cl"
  clang-15 -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -finclude-default-header -O3 -march=sm_86 -DASM_KW=__asm__ $v -S -o "$T/k.ptx" "$T/all.cl"
  sed -i 's/^.target sm_86/.target sm_90/; s/^.version .*/.version 8.0/' "$T/k.ptx"
  echo "$v: $(ptxas -arch=sm_90 -v "$T/k.ptx" -o "$T/k.cubin" 2>&1 | grep -A2 'properties for gemm_mma' | tail -2 | tr -s ' \n' ' ')"
done
rm -rf "$T"
