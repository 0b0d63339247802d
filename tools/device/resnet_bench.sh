#!/usr/bin/env bash
# Issue 43 on the GPU machine, in one call, one build: ResNet-18/50 f16 at batch 1 (the fixtures)
# and batch 32 (exported here with npusim_export, random weights, PyTorch's reference outputs
# computed on the GPU), each run checked against PyTorch and timed with `npusim run --time`; a
# profile of each batch kernel by kernel (its largest launches with the path explain names); and
# PyTorch's CUDA-graph (batch 1) and channels-last eager (batch 32) times in the same call.
#   source .devdeps/device-env.sh && tools/device/resnet_bench.sh     carry: [".devdeps"]
# Env: STEPS (any of tests,export,run,profile,explain,records,prefill_stats,gemm,torch; default all but records
# and prefill_stats, the host's breakdown of a Qwen2.5-1.5B prefill `run` and first token), MODELS
# (default "resnet18 resnet50"), BATCHES (default "1 32"), RUNS (timed runs, default 100),
# VARIANTS ("name[@VAR=value]" words: the same binary under an environment variable; default "new"),
# PROFILE_VARIANTS (those profiled; default VARIANTS), SHAPES (gemm: MxKxN words).
# Needs .devdeps/pyir (pytorch-ir's torch_ir/) for the export. Results in $OUT/resnet_bench.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-resnet}
R=$OUT/resnet_bench
mkdir -p "$R"
t0=$(date +%s)
STEPS=${STEPS:-export,run,profile,explain,torch}
has() { [[ ",$STEPS," == *",$1,"* ]]; }
MODELS=${MODELS:-"resnet18 resnet50"}
BATCHES=${BATCHES:-"1 32"}
RUNS=${RUNS:-100}
VARIANTS=${VARIANTS:-new}
# shellcheck source=tools/device/lib.sh
source tools/device/lib.sh
device_env
device_machine
targets=(npusim_cli)
has tests && targets+=(npusim_opencl_tests)
device_build "${targets[@]}" || exit 1
echo "build: $(( $(date +%s) - t0 )) s"
pack() { tar -czf "$OUT/resnet_bench.tar.gz" -C "$OUT" --exclude='trace*.json' resnet_bench; }
B=build-g/npusim
if has tests; then  # the convolution kernels on the tensor cores: fixtures, the channels-last chain, the ResNets, explain's paths
  timeout 300 build-g/tests/npusim_opencl_tests \
    --gtest_filter='OpenCLConv.*:OpenCLGemm.*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*conv*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*pool*:OpenCLKernelChoice.*' \
    > "$R/tests.log" 2>&1
  echo "tests: rc $? $(grep -E '^\[  (PASSED|FAILED) ' "$R/tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' "$R/tests.log" | head -10
fi
W=/tmp/npusim-resnet-models
mkdir -p "$W"
# The model folder of MODEL at BATCH: the fixture at batch 1, an export otherwise.
dir() { if [[ $2 == 1 ]]; then echo "tests/data/models/$1"; else echo "$W/${1}_b$2"; fi; }
venv() { [[ $1 == *@* ]] && echo "${1#*@}"; }
if has export; then
  for m in $MODELS; do
    for b in $BATCHES; do
      [[ $b == 1 ]] && continue
      e0=$(date +%s)
      PYTHONPATH=python:.devdeps/pyir timeout 300 python3 -m npusim_export "torchvision:$m" "$(dir "$m" "$b")" --weights random \
        --input-shape "$b,3,224,224" --dtype f16 --device cuda > "$R/export_${m}_b$b.log" 2>&1
      echo "export $m b$b: rc $? $(( $(date +%s) - e0 )) s $(tail -1 "$R/export_${m}_b$b.log" | cut -c1-120)"
    done
  done
fi
if has run; then
  for round in 1 2; do
    for v in $VARIANTS; do
      n=${v%%@*}
      for m in $MODELS; do
        for b in $BATCHES; do
          # shellcheck disable=SC2046
          env $(venv "$v") timeout 200 $B run "$(dir "$m" "$b")" --target opencl --dtype f16 --time "$RUNS" > "$R/run_${m}_b${b}_${n}_$round.log" 2>&1
          echo "$m b$b $n r$round: rc $? $(grep -E 'latency|top-5|rel_l2|rror|FAIL' "$R/run_${m}_b${b}_${n}_$round.log" | tr '\n' ' ' | cut -c1-260)"
        done
      done
    done
  done
  pack
fi
if has explain; then
  for m in $MODELS; do
    timeout 100 $B explain "$(dir "$m" 1)/ir.json" --target opencl --dtype f16 --kernels > "$R/explain_${m}_b1.txt" 2>&1
  done
fi
if has profile; then
  for v in ${PROFILE_VARIANTS:-$VARIANTS}; do
    n=${v%%@*}
    for m in $MODELS; do
      for b in $BATCHES; do
        tr=$R/trace_${m}_b${b}_$n.json
        # shellcheck disable=SC2046
        env $(venv "$v") timeout 200 $B run "$(dir "$m" "$b")" --target opencl --dtype f16 --profile --runs 10 --trace "$tr" > "$R/profile_${m}_b${b}_$n.log" 2>&1
        python3 - "$tr" 10 > "$R/kernels_${m}_b${b}_$n.txt" <<'EOF'
import collections, json, sys
d = json.load(open(sys.argv[1])); runs = int(sys.argv[2])
ev = [e for e in d["traceEvents"] if e.get("ph") == "X" and "device_us" in e.get("args", {})]
by = collections.defaultdict(list)
for e in ev: by[e["name"]].append(e["args"]["device_us"])
tot = sum(sum(v) for v in by.values()) / runs
print(f"{len(ev) / runs:.0f} launches per run, {tot:.1f} us of device time per run (sum of kernels)")
rows = sorted(((sorted(v)[len(v) // 2], len(v) // runs, k) for k, v in by.items()), reverse=True)
for med, cnt, k in rows: print(f"{med:9.1f} us x{cnt}  {k}")
EOF
        echo "profile $m b$b $n: $(head -1 "$R/kernels_${m}_b${b}_$n.txt")"; sed -n 2,6p "$R/kernels_${m}_b${b}_$n.txt"
      done
    done
  done
  pack
fi
if has records; then  # what docs/bench keeps: npusim bench --json of each model at batch 1
  for m in $MODELS; do
    timeout 200 $B bench "$(dir "$m" 1)" --target opencl --dtype f16 --repeats 200 --json "$R/h200_${m}_f16.json" > "$R/record_$m.log" 2>&1
    [[ " $BATCHES " == *" 32 "* ]] && timeout 200 $B bench "$(dir "$m" 32)" --target opencl --dtype f16 --repeats 50 --json "$R/h200_${m}_b32_f16.json" > "$R/record_${m}_b32.log" 2>&1
  done
  grep -hE 'latency|throughput|rror' "$R"/record_*.log
  pack
fi
if has prefill_stats; then  # where a prefill's host time goes: run (all rows) against bench-llm's first token
  P=tests/data/models/qwen2.5_1.5b_prefill D=tests/data/models/qwen2.5_1.5b_decode
  NPUSIM_OPENCL_STATS=1 timeout 120 $B run $P --target opencl --dtype bf16 --time 10 > "$R/prefill_run_stats.log" 2>&1
  NPUSIM_OPENCL_STATS=1 timeout 150 $B bench-llm $P $D --target opencl --dtype bf16 --positions 128 --repeats 10 > "$R/prefill_ttft_stats.log" 2>&1
  grep -hE 'latency|first token|opencl partition' "$R"/prefill_*_stats.log | cut -c1-330
  pack
fi
if has gemm; then  # the matrix kernel alone (bench/opencl_gemm_time.cpp: bf16, a linear layer's binding, no epilogue) at the convolutions' shapes
  g++ -std=c++20 -O2 -DMSGPACK_NO_BOOST -Iinclude -I"$DEVDEPS_PREFIX/include/eigen3" -Ibuild-g/generated/include bench/opencl_gemm_time.cpp \
    -o build-g/gemm_time -lOpenCL > "$R/gemm_build.log" 2>&1 || tail -5 "$R/gemm_build.log"
  timeout 120 build-g/gemm_time ${SHAPES:-3136x64x64 3136x64x256 3136x576x64 100352x64x256 100352x576x64 128x1536x8960} > "$R/gemm.log" 2>&1
  grep '^GEMM' "$R/gemm.log"
fi
if has torch; then
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/torch_peer.py resnet > "$R/torch.log" 2>&1; grep PEER "$R/torch.log"
  pack
fi
echo "total: $(( $(date +%s) - t0 )) s"
