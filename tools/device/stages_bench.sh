#!/usr/bin/env bash
# Issue 44, item 4, on a lent machine with two (or more) GPUs, in one call: pipeline stages across
# GPUs against one GPU for Qwen2.5-1.5B (greedy tokens checked against PyTorch's, decode step times
# by bench-llm), the same under mpirun (one rank per stage and GPU), and a model that does not fit
# one card: the Qwen2.5-72B shape exported on the meta device with synthetic weights
# (npusim-export hf:qwen2.5-72b --weights synth --no-reference), across the GPUs.
#   source .devdeps/device-env.sh && tools/device/stages_bench.sh      carry: [".devdeps"]
# Env: Q72=DIR (a case folder with prefill/ and decode/; exported here when missing), STEPS (72B
# tokens, default 16), SKIP (space-separated parts to skip: check q15 mpi q72 q72one), ROUNDS (bench-llm
# rounds over the configurations, interleaved; default 1), REPEATS (steps per position, default 20),
# CONFIGS (default "one two four"; also "pair": 4 stages as 0,0,1,1), AHEAD (NPUSIM_PIPELINE_AHEAD
# values to compare, default "1"; e.g. "0 1"), MPICFG and Q72CFG (the configuration mpirun and the
# 72B shape use: "two" (default) or "four"; mpirun then runs one rank per stage). Results in
# $OUT/stages.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-stages}
R=$OUT/stages
mkdir -p "$R"
t0=$(date +%s)
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader; nvidia-smi topo -m; date -u; g++ --version | head -1;
  nproc; free -g | head -2; mpirun --version | head -1; } > "$R/machine.txt" 2>&1
head -4 "$R/machine.txt"
nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv,noheader -l 2 > "$R/gpu_memory.csv" 2>&1 &
smi=$!
trap 'kill $smi 2>/dev/null; tar -C "$OUT" -czf "$OUT/stages.tar.gz" stages' EXIT
cmake -S . -B build-s -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_BUILD_TESTS=OFF -DNPUSIM_BUILD_BENCH=OFF \
  -DNPUSIM_BUILD_EXAMPLES=OFF -DNPUSIM_BUILD_DOC_SNIPPETS=OFF > "$R/configure.log" 2>&1 || { tail -30 "$R/configure.log"; exit 1; }
grep -i "mpi" "$R/configure.log" | head -2
cmake --build build-s -j"$(nproc)" --target npusim_cli > "$R/build.log" 2>&1 || { grep -E 'error' "$R/build.log" | head -30; exit 1; }
echo "build: $(elapsed)"
N=build-s/npusim
export NPUSIM_OPENCL_CACHE=/tmp/npusim-cl-cache
$N devices > "$R/devices.txt" 2>&1
# the NVIDIA GPUs' indices in npusim's device list
mapfile -t G < <(awk '/NVIDIA/ && $1 ~ /^[0-9]+$/ {print $1}' "$R/devices.txt")
echo "GPUs in npusim's list: ${G[*]:-none}"
[[ ${#G[@]} -ge 2 ]] || { cat "$R/devices.txt"; exit 1; }
one=${G[0]} two="${G[0]},${G[1]}" four="${G[0]},${G[1]},${G[0]},${G[1]}" pair="${G[0]},${G[0]},${G[1]},${G[1]}"
[[ ${#G[@]} -ge 4 ]] && four="${G[0]},${G[1]},${G[2]},${G[3]}"
declare -A OPTS=([one]="--devices $one" [two]="--devices $two" [four]="--stages 4 --devices $four" [pair]="--stages 4 --devices $pair")
MPICFG=${MPICFG:-two} Q72CFG=${Q72CFG:-two} AHEAD=${AHEAD:-1}
AHEAD_FIRST=${AHEAD%% *}
declare -A NP=([two]=2 [four]=4 [pair]=4)
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
summary() {  # summary NAME LOG: the lines a reader wants from a generate or bench-llm log
  echo "$1: $(grep -E 'greedy|^tokens:|^PASS|^FAIL|error|time to first|decode .*ms|median' "$2" | grep -v '^stage' | head -6 | tr '\n' ' ')"
}
if ! skip q15; then
  if ! skip check; then
    for name in ${CONFIGS:-one two four}; do
      # shellcheck disable=SC2086
      $N generate $P $D --check --target opencl --dtype bf16 ${OPTS[$name]} > "$R/q15_check_$name.log" 2>&1
      summary "q15 check $name (${OPTS[$name]})" "$R/q15_check_$name.log"
      # shellcheck disable=SC2086
      $N explain $D/ir.json --dtype bf16 --target opencl ${OPTS[$name]} > "$R/q15_explain_$name.txt" 2>&1
    done
  fi
  for round in $(seq 1 "${ROUNDS:-1}"); do
    for name in ${CONFIGS:-one two four}; do
      for ahead in ${AHEAD:-1}; do
        [[ $name == one && $ahead != "${AHEAD_FIRST}" ]] && continue  # one partition: nothing to run ahead
        tag=${name}_ahead${ahead}_$round
        # shellcheck disable=SC2086
        NPUSIM_PIPELINE_AHEAD=$ahead NPUSIM_OPENCL_STATS=1 $N bench-llm $P $D --target opencl --dtype bf16 --positions 128,1024 \
          --repeats "${REPEATS:-20}" --json "$R/q15_bench_$tag.json" ${OPTS[$name]} > "$R/q15_bench_$tag.log" 2>&1
        echo "q15 bench $tag: $(grep -E '^ *(128|1024) ' "$R/q15_bench_$tag.log" | tr -s ' ' | tr '\n' '|') ($(elapsed))"
      done
    done
  done
fi
MPI_OK=none
if ! skip mpi; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # which OpenCL devices a rank sees: launched by mpirun but not under MPI_Init, then under it
  np=${NP[$MPICFG]}
  mpirun -np 2 --tag-output env -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE $N devices > "$R/mpi_devices.txt" 2>&1
  mpirun -np 2 --tag-output sh -c 'env | grep -iE "cuda|ocl|nvidia|visible|hwloc|mca" | sort' > "$R/mpi_env.txt" 2>&1
  echo "mpirun ranks see (no MPI_Init): $(grep -c NVIDIA "$R/mpi_devices.txt") NVIDIA lines"
  # the lent machine's shell has OCL_ICD_FILENAMES=libpocl.so.2:libnvidia-opencl.so.1 and mpirun hands
  # its ranks only the first entry (PoCL alone): pass it whole (the parent's order: the same indices)
  for variant in "plain:" "whole:-x OCL_ICD_FILENAMES=${OCL_ICD_FILENAMES:-}"; do
    vn=${variant%%:*} vo=${variant#*:}
    # shellcheck disable=SC2086
    timeout 120 mpirun -np "$np" $vo $N generate $P $D --check --target opencl --dtype bf16 ${OPTS[$MPICFG]} > "$R/q15_mpi_check_$vn.log" 2>&1
    summary "q15 mpirun -np $np $vo check" "$R/q15_mpi_check_$vn.log"
    if grep -q '^PASS' "$R/q15_mpi_check_$vn.log"; then
      MPI_OK=${vo:-plain}
      # shellcheck disable=SC2086
      timeout 120 mpirun -np "$np" $vo $N generate $P $D --target opencl --dtype bf16 ${OPTS[$MPICFG]} --max-new-tokens 64 > "$R/q15_mpi_gen.log" 2>&1
      summary "q15 mpirun -np $np $vo generate 64" "$R/q15_mpi_gen.log"
      grep -E 'stage link' "$R/q15_mpi_gen.log"
      break
    fi
  done
  echo "($(elapsed))"
fi
if ! skip q72; then
  Q72=${Q72:-/tmp/q72}
  if [[ ! -f $Q72/decode/ir.json ]]; then
    PYTHONPATH=python:.devdeps/pyir python3 -m npusim_export hf:qwen2.5-72b "$Q72" --weights synth --no-reference \
      --prefill-len 128 --cache-len 1024 > "$R/q72_export.log" 2>&1 || { tail -20 "$R/q72_export.log"; exit 1; }
  fi
  # shellcheck disable=SC2086
  $N explain "$Q72/decode/ir.json" --dtype bf16 --target opencl ${OPTS[$Q72CFG]} > "$R/q72_explain.txt" 2>&1
  grep -A3 '^stages' "$R/q72_explain.txt"
  if ! skip q72one; then
    # shellcheck disable=SC2086
    /usr/bin/time -v $N generate "$Q72/prefill" "$Q72/decode" --target opencl --dtype bf16 ${OPTS[$Q72CFG]} \
      --max-new-tokens "${STEPS:-16}" > "$R/q72_gen.log" 2>&1
    summary "q72 generate ${OPTS[$Q72CFG]}" "$R/q72_gen.log"
    grep -E 'Maximum resident|Elapsed' "$R/q72_gen.log"
  fi
  awk -F', ' '{split($3, a, " "); if (a[1] + 0 > m[$2]) m[$2] = a[1] + 0} END {for (g in m) printf "GPU %s peak %d MiB\n", g, m[g]}' "$R/gpu_memory.csv"
  if [[ $MPI_OK != none ]]; then  # one rank per stage and GPU: each rank generates only its stage's weights
    # shellcheck disable=SC2086
    /usr/bin/time -v timeout 300 mpirun -np "${NP[$Q72CFG]}" ${MPI_OK#plain} $N generate "$Q72/prefill" "$Q72/decode" --target opencl --dtype bf16 \
      ${OPTS[$Q72CFG]} --max-new-tokens "${STEPS:-16}" > "$R/q72_mpi_gen.log" 2>&1
    summary "q72 mpirun -np ${NP[$Q72CFG]} generate" "$R/q72_mpi_gen.log"
    grep -E 'Maximum resident|stage link' "$R/q72_mpi_gen.log"
  fi
  echo "($(elapsed))"
fi
