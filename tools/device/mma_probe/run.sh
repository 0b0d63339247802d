#!/usr/bin/env bash
# The OpenCL target's tensor-core probe on an NVIDIA GPU (docs/opencl.md, "Tensor cores"): runs
# cl/gemm.cl's mma_probe as it is and in variants that change one thing each, every variant in its
# own process, and keeps each build's PTX in $OUT. On an H100 (2026-11-26): as it is and no_trans
# exact, unaligned faults (the bug it found), mma_only wrong by design (constant fragments).
#   source .devdeps/device-env.sh && tools/device/mma_probe/run.sh      carry: [".devdeps"]
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/mma-probe}
W=$(mktemp -d)
mkdir -p "$OUT"
CL=../../../include/npusim/target/opencl/cl
g++ -std=c++17 -O1 -Wall probe_host.cpp -o "$W/probe_host" -lOpenCL || exit 1
cp "$CL/common.cl" "$CL/gemm.cl" "$W/"
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
s = open(f"{w}/gemm.cl").read()
tiles = ("  __local ushort sa[16 * 24] __attribute__((aligned(16))), sw[16 * 24] __attribute__((aligned(16))),\n"
         "      sb[16 * 24] __attribute__((aligned(16)));")
trans = "  LDSM_X4_T(b1[0], b1[1], b1[2], b1[3], mma_smem_addr(sb), PB_OFF);"
ldsm = ("  LDSM_X4(af[0], af[1], af[2], af[3], mma_smem_addr(sa), PA_OFF);\n"
        "  LDSM_X4(b0[0], b0[1], b0[2], b0[3], mma_smem_addr(sw), PW_OFF);")
for x in (tiles, trans, ldsm):
    assert x in s, x
no_trans = "  b1[0] = b0[0], b1[1] = b0[1], b1[2] = b0[2], b1[3] = b0[3];"
variants = {
    # the tiles only 2-byte aligned, as before the fix: faults on an H100 (ldmatrix reads 16-byte rows)
    "unaligned": s.replace(tiles, "  __local ushort sa[16 * 24], sw[16 * 24], sb[16 * 24];"),
    # no ldmatrix.trans: the second way reuses the first way's fragments
    "no_trans": s.replace(trans, no_trans),
    # no ldmatrix at all: mma.sync on constant fragments (1.0 in f16, 2^-126-ish in bf16)
    "mma_only": s.replace(ldsm, "  af[0] = af[1] = af[2] = af[3] = b0[0] = b0[1] = b0[2] = b0[3] = 0x3c003c00u;").replace(trans, no_trans),
}
for name, text in variants.items():
    open(f"{w}/gemm_{name}.cl", "w").write(text)
PY
for v in gemm gemm_unaligned gemm_no_trans gemm_mma_only; do
  for t in 2 1; do
    echo "== $v, MMA_T=$t ($([ $t = 2 ] && echo bf16 || echo f16))"
    timeout 60 "$W/probe_host" "$OUT/$v-$t.ptx" "$W/common.cl" "$W/$v.cl" -- -cl-std=CL1.2 -DIDX32 -DMMA=1 -DMMA_T=$t -DTA=$t -DTB=$t -DTC=$t
  done
done
rm -rf "$W"
