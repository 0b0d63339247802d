#!/usr/bin/env bash
# The model-zoo sweep of issue 27 on the GPU machine (torch, torchvision and transformers are
# installed there), in one device call: builds the CLI with the machine's compiler, then runs
# tools/model_zoo/sweep.py for at most BUDGET seconds; cases and results stay in .cache/zoo (ignored,
# kept while the machine is warm), so a second call goes on where the first stopped.
# Here, once: ../shared/tools/device-prep.sh; cp ../shared/fixtures/make_fixtures.py .devdeps/;
# the pytorch-ir package (module torch_ir, pure Python) unpacked under .devdeps/pyir/.
#   run: source .devdeps/device-env.sh && bash tools/model_zoo/device.sh [BUDGET] [ONLY]   carry: [".devdeps"]
# Env: TARGETS (default reference,cpu,opencl), WEIGHTS_DTYPES=q8,q4 adds the LLMs with quantized
# linear weights (the quality table of docs/quantization.md).
# Writes $OUT/zoo.json, $OUT/model-zoo.md (the table for docs/model-zoo.md) and $OUT/sweep.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-zoo}
BUDGET=${1:-450}
ONLY=${2:-}
mkdir -p "$OUT" .cache/zoo
for need in .devdeps/make_fixtures.py .devdeps/pyir/torch_ir/__init__.py; do
  [ -f "$need" ] || { echo "device.sh: $need is missing (see the comment at the top)" >&2; exit 2; }
done
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
export NPUSIM_OPENCL_CACHE=/tmp/npusim-cl-cache
t0=$(date +%s)
if [ ! -x build-zoo/npusim ]; then
  cmake -S . -B build-zoo -DCMAKE_BUILD_TYPE=Release -DNPUSIM_BUILD_TESTS=OFF -DNPUSIM_BUILD_BENCH=OFF -DNPUSIM_BUILD_EXAMPLES=OFF \
        -DNPUSIM_BUILD_DOC_SNIPPETS=OFF > "$OUT/build.log" 2>&1 &&
    cmake --build build-zoo --target npusim_cli -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
echo "build: $(( $(date +%s) - t0 )) s"
left=$(( BUDGET - ($(date +%s) - t0) ))
PYTHONPATH=.devdeps/pyir${PYTHONPATH:+:$PYTHONPATH} python3 tools/model_zoo/sweep.py --npusim build-zoo/npusim \
  --make-fixtures .devdeps/make_fixtures.py --cases .cache/zoo --results .cache/zoo/results.json --md "$OUT/model-zoo.md" \
  --budget "$left" --timeout 120 ${ONLY:+--only "$ONLY"} ${TARGETS:+--targets "$TARGETS"} ${WEIGHTS_DTYPES:+--weights-dtypes "$WEIGHTS_DTYPES"} \
  2>&1 | tee "$OUT/sweep.log"
cp .cache/zoo/results.json "$OUT/zoo.json"
