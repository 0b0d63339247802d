#!/usr/bin/env bash
# The whole tree with the GPU machine's compiler (GCC 13 there), warnings as errors, then every test:
# what README.md's "Compilers" line records for that machine (issue 23, item 6).
#   source .devdeps/device-env.sh && tools/device/compiler_check.sh [STEPS]     carry: [".devdeps"]
# STEPS: any of build,test,pocl (default all): `test` runs ctest as CI does, every label (the OpenCL
# tests on the default device, the first GPU: NVIDIA's), `pocl` the OpenCL test binary again on PoCL.
# Resumable while the machine is warm (build-gcc/ stays). Logs in $OUT; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-compiler-check}
STEPS=${1:-build,test,pocl}
has() { [[ ",$STEPS," == *",$1,"* ]]; }
mkdir -p "$OUT"
echo "compiler: $(g++ --version | head -1); cmake $(cmake --version | head -1 | awk '{print $3}'); $(nproc) cores"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); avx512f: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no); amx: $(grep -qw amx_tile /proc/cpuinfo && echo yes || echo no)"
status=0
if has build; then
  t0=$(date +%s)
  cmake -S . -B build-gcc -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_WERROR=ON > "$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log"; exit 1; }
  # -k: every failing file in one run, not just the first
  if cmake --build build-gcc -j"$(nproc)" -- -k > "$OUT/build.log" 2>&1; then
    echo "build: ok in $(( $(date +%s) - t0 )) s, $(grep -c 'warning:' "$OUT/build.log") warnings (-Werror)"
  else
    echo "build: FAILED after $(( $(date +%s) - t0 )) s"
    grep -E 'error:|warning:' "$OUT/build.log" | sort | uniq -c | sort -rn | head -30
    exit 1
  fi
fi
if has test; then
  t0=$(date +%s)
  (cd build-gcc && ctest -j"$(nproc)" --output-on-failure --timeout 600) > "$OUT/ctest.log" 2>&1 || status=1
  echo "ctest (all labels): $(grep -E 'tests passed|tests failed' "$OUT/ctest.log") in $(( $(date +%s) - t0 )) s"
  grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess)' "$OUT/ctest.log" | head -20
  grep -E 'Skipped|Not Run' "$OUT/ctest.log" | head -5
fi
if has pocl; then
  t0=$(date +%s)
  NPUSIM_OPENCL_DEVICE="Portable Computing Language" build-gcc/tests/npusim_opencl_tests > "$OUT/opencl_pocl.log" 2>&1 || status=1
  echo "OpenCL tests on PoCL: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/opencl_pocl.log" | tr '\n' ' ') in $(( $(date +%s) - t0 )) s"
  grep -E '^\[  FAILED  \]' "$OUT/opencl_pocl.log" | head -20
fi
exit $status
