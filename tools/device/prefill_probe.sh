#!/usr/bin/env bash
# Issue 43: the host side of a Qwen2.5-1.5B prefill on the GPU (a run was ~42 ms, its kernels
# ~15 ms). Builds the CLI (GCC 13); generate --check once; then, for each NPUSIM_OPENCL_PINNED value
# in MODES (default "0 1": pageable, pinned; the session of 2026-11-27 also had kinds since
# dropped: alloc, stream, use, direct = today's 1), alternating over two rounds: `run --time` of
# the bf16 prefill with the executor's breakdown (NPUSIM_OPENCL_STATS), ResNet-18/50 f16, and
# bench-llm bf16 at position 128 (time to first token, step).
#   source .devdeps/device-env.sh && tools/device/prefill_probe.sh     carry: [".devdeps"]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-probe}
R=$OUT/probe
mkdir -p "$R"
t0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$R/machine.txt"; cat "$R/machine.txt"
cmake -S . -B build-p -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_WERROR=ON > "$R/configure.log" 2>&1 || { tail -30 "$R/configure.log"; exit 1; }
cmake --build build-p -j"$(nproc)" --target npusim_cli > "$R/build.log" 2>&1 || { grep -E 'error' "$R/build.log" | head; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
pack() { tar -czf "$OUT/probe.tar.gz" -C "$OUT" --exclude='*.json' probe; }
strip() { sed 's/launch by launch: the default (NPUSIM_OPENCL_PERSISTENT=on for one launch)//' | tr '\n' ' ' | cut -c1-${1:-330}; }
timeout 150 build-p/npusim generate $P $D --check --target opencl --dtype bf16 > "$R/check.log" 2>&1
echo "check bf16: $(grep -E 'greedy tokens|^PASS|^FAIL|rror' "$R/check.log" | tr '\n' ' ' | cut -c1-200)"
for round in 1 2; do
  for m in ${MODES:-0 1}; do
    export NPUSIM_OPENCL_PINNED=$m NPUSIM_OPENCL_STATS=1
    timeout 150 build-p/npusim run $P --target opencl --dtype bf16 --time 10 > "$R/run_${m}_$round.log" 2>&1
    echo "prefill $m/$round: $(grep -E 'latency|opencl partition' "$R/run_${m}_$round.log" | strip)"
    for r in resnet18 resnet50; do
      timeout 120 build-p/npusim run $M/$r --target opencl --dtype f16 --time 200 > "$R/run_${r}_${m}_$round.log" 2>&1
      echo "$r $m/$round: $(grep -E 'latency|opencl partition|FAIL' "$R/run_${r}_${m}_$round.log" | strip 260)"
    done
    timeout 150 build-p/npusim bench-llm $P $D --target opencl --dtype bf16 --positions 128 --repeats 12 > "$R/bench_${m}_$round.log" 2>&1
    echo "bench $m/$round: $(grep -E 'first token|^ +128 ' "$R/bench_${m}_$round.log" | strip 250)"
    pack
  done
done
echo "total: $(( $(date +%s) - t0 )) s"
