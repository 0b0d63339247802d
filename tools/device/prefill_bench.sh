#!/usr/bin/env bash
# Issues 43 and 37 on the GPU machine, in one call: where a Qwen2.5-1.5B prefill's time goes, and the
# prefill GEMM that reads q8_0/q4_0 blocks. Builds the CLI and the OpenCL tests (GCC 13), runs the
# packed-weight kernel tests on the GPU (tensor cores), generate --check with q8 and q4 weights,
# `run --profile --trace` of the prefill (bf16, q4: device time by kernel kind, host time around
# it), `run --time` of the prefill for bf16, q8, q4, then bench-llm (time to first token and the
# decode step) for bf16, q8, q4 and bf16 again, `run --time` of ResNet-18/50 f16, and PyTorch's
# eager prefill and ResNet peers last (same GPU).
#   source .devdeps/device-env.sh && tools/device/prefill_bench.sh     carry: [".devdeps"]
# Results in $OUT/prefill.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-prefill}
R=$OUT/prefill
mkdir -p "$R"
t0=$(date +%s)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u; g++ --version | head -1; git log -1 --format='%h %s' 2>/dev/null | cut -c1-100; } > "$R/machine.txt"
cat "$R/machine.txt"
cmake -S . -B build-p -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DNPUSIM_WERROR=ON > "$R/configure.log" 2>&1 || { tail -30 "$R/configure.log"; exit 1; }
if ! cmake --build build-p -j"$(nproc)" --target npusim_cli npusim_opencl_tests > "$R/build.log" 2>&1; then
  grep -E 'error|warning' "$R/build.log" | head -30
  exit 1
fi
echo "build: $(( $(date +%s) - t0 )) s"
export NPUSIM_OPENCL_DEVICE=${NPUSIM_OPENCL_DEVICE:-NVIDIA}
pack() { tar -czf "$OUT/prefill.tar.gz" -C "$OUT" --exclude='trace_*.json' prefill; }  # after each step: a call cut short keeps what it has
timeout ${TEST_TIMEOUT:-240} build-p/tests/npusim_opencl_tests --gtest_filter="${TESTS:-OpenCLGemvQ.*:OpenCLQuantizedLinear.*:OpenCLGemm.*}" > "$R/tests.log" 2>&1 ||
  echo "tests: exit $? (124: over ${TEST_TIMEOUT:-240} s)"
grep -E '^\[  (PASSED|FAILED)|FAILED  \]|matrix kernels on' "$R/tests.log"
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
for w in q4 q8; do
  timeout 150 build-p/npusim generate $P $D --check --target opencl --dtype bf16 --weights-dtype $w > "$R/check_$w.log" 2>&1
  echo "check $w: $(grep -E 'greedy tokens|^PASS|^FAIL|rror' "$R/check_$w.log" | tr '\n' ' ' | cut -c1-300)"
done
pack
# The prefill alone: device time by kernel kind, and the run's wall time around it.
for w in bf16 q4; do
  wd=()
  [[ $w == q* ]] && wd=(--weights-dtype $w)
  NPUSIM_OPENCL_STATS=1 timeout 150 build-p/npusim run $P --target opencl --dtype bf16 "${wd[@]}" --profile --runs 3 --trace "$R/trace_$w.json" > "$R/profile_$w.log" 2>&1
  echo "profile $w:"; python3 tools/device/trace_kinds.py "$R/trace_$w.json" 2>&1 | tee "$R/kernels_$w.txt" | head -10
  python3 - "$R/trace_$w.json" <<'EOF' 2>&1 | tee -a "$R/kernels_$w.txt"
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in (d["traceEvents"] if isinstance(d, dict) else d) if e.get("ph") == "X"]
dev = [e for e in ev if "device_us" in e.get("args", {})]
other = sorted({e["name"] for e in ev if "device_us" not in e.get("args", {})})
print(f"  trace: {len(ev)} events, {len(dev)} kernels, {sum(e['args']['device_us'] for e in dev) / 3:.0f} us of device time per run; host events: {', '.join(other)[:300]}")
print(f"  host_us (enqueue) per run: {sum(e['args'].get('host_us', 0) for e in dev) / 3:.0f}")
EOF
  grep -E 'opencl partition|total kernels|wall' "$R/profile_$w.log" | head -8
  pack
done
for w in bf16 q8 q4 bf16_pageable; do
  wd=()
  [[ $w == q* ]] && wd=(--weights-dtype $w)
  NPUSIM_OPENCL_PINNED=$([[ $w == *pageable ]] && echo 0 || echo 1) NPUSIM_OPENCL_STATS=1 timeout 150 build-p/npusim run $P --target opencl --dtype bf16 "${wd[@]}" --time 10 > "$R/run_$w.log" 2>&1
  echo "run $w: $(grep -E 'latency|opencl partition' "$R/run_$w.log" | sed 's/launch by launch: the default (NPUSIM_OPENCL_PERSISTENT=on for one launch)//' | tr '\n' ' ' | cut -c1-300)"
done
pack
for w in bf16 q8 q4 bf16_pageable; do
  wd=()
  [[ $w == q* ]] && wd=(--weights-dtype $w)
  NPUSIM_OPENCL_PINNED=$([[ $w == *pageable ]] && echo 0 || echo 1) NPUSIM_OPENCL_STATS=1 timeout 150 build-p/npusim bench-llm $P $D --target opencl --dtype bf16 "${wd[@]}" --positions 128 --repeats 12 --json "$R/bench_$w.json" \
    > "$R/bench_$w.log" 2>&1
  echo "bench $w:"; grep -E '^ +[0-9]+ |weights read|first token|rror' "$R/bench_$w.log" | cut -c1-220 | head -6
  pack
done
# ResNet-18/50 f16 batch 1 (the inputs' upload and the outputs' read go through the same executor).
for m in resnet18 resnet50 resnet18_pageable resnet50_pageable resnet18_again resnet50_again; do
  NPUSIM_OPENCL_PINNED=$([[ $m == *pageable ]] && echo 0 || echo 1) NPUSIM_OPENCL_STATS=1 timeout 120 build-p/npusim run $M/${m%%_*} --target opencl --dtype f16 --time 200 > "$R/run_$m.log" 2>&1
  echo "run $m: $(grep -E 'latency|opencl partition|top-5|PASS|FAIL' "$R/run_$m.log" | sed 's/launch by launch: the default (NPUSIM_OPENCL_PERSISTENT=on for one launch)//' | tr '\n' ' ' | cut -c1-400)"
done
pack
timeout 300 python3 bench/torch_peer.py ${PEERS:-hf resnet} > "$R/torch.log" 2>&1; grep PEER "$R/torch.log"
echo "total: $(( $(date +%s) - t0 )) s"
rm -f "$R"/trace_*.json
tar -czf "$OUT/prefill.tar.gz" -C "$OUT" prefill
