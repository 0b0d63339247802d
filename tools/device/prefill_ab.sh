#!/usr/bin/env bash
# Issue 43 on the GPU machine, in one call, one build: the Qwen2.5-1.5B prefill with fusion patterns
# left out (--no-pattern) against the tree's defaults, so that one binary times what a pattern
# gains. Builds this tree's CLI and OpenCL tests (GCC 13); runs the matrix-kernel tests on the
# tensor cores; then per round, each variant in turn: `run --time 10` (all 128 rows of logits) and
# bench-llm's time to first token (NPUSIM_OPENCL_STATS=1: the host's enqueueing); a profile by
# kernel kind of each variant; generate --check; PyTorch's Hugging Face prefill last.
#   source .devdeps/device-env.sh && tools/device/prefill_ab.sh     carry: [".devdeps"]
# Env: VARIANTS ("name=pattern,pattern[@VAR=value]" words: patterns to leave out, then an
# environment variable for that variant; "name=" is the default build; default: new=, then the
# q/k/v and gate/up groups left out, then also the transposes' patterns), ROUNDS (2),
# STEPS (any of tests,prefill,profile,check,records,torch; default all but records), EXTRA (more bench-llm arguments),
# PROFILE_VARIANTS (those profiled; default VARIANTS).
# Results in $OUT/prefill_ab.tar.gz; a summary on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/npusim-prefill}
R=$OUT/prefill_ab
mkdir -p "$R"
t0=$(date +%s)
STEPS=${STEPS:-tests,prefill,profile,check,torch}
has() { [[ ",$STEPS," == *",$1,"* ]]; }
# shellcheck source=tools/device/lib.sh
source tools/device/lib.sh
device_env
device_machine
targets=(npusim_cli)
has tests && targets+=(npusim_opencl_tests)
device_build "${targets[@]}" || exit 1
echo "build: $(( $(date +%s) - t0 )) s"
pack() { tar -czf "$OUT/prefill_ab.tar.gz" -C "$OUT" --exclude='trace*.json' prefill_ab; }
B=build-g/npusim
if has tests; then
  timeout 300 build-g/tests/npusim_opencl_tests \
    --gtest_filter='OpenCLGemm.*:OpenCLModels.*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*linear*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/*matmul*:Fixtures/OpenCLOpCase.MatchesPyTorchInFloat16/silu_gate_mlp:OpenCLQuantizedLinear.*:OpenCLKernelChoice.*' \
    > "$R/tests.log" 2>&1
  echo "tests: rc $? $(grep -E '^\[  (PASSED|FAILED) |matrix kernels on' "$R/tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' "$R/tests.log" | head -10
fi
VARIANTS=${VARIANTS:-"new= groups_off=linear_group,linear_silu_gate groups_transposes_off=linear_group,linear_silu_gate,transposed_rotary,attention_transposed"}
nopat() { local p=${1#*=}; p=${p%%@*}; [[ -n $p ]] && echo "--no-pattern $p"; }
venv() { [[ $1 == *@* ]] && echo "${1#*@}"; }  # the variant's VAR=value, if any
M=tests/data/models
P=$M/qwen2.5_1.5b_prefill D=$M/qwen2.5_1.5b_decode
if has prefill; then
  for round in $(seq "${ROUNDS:-2}"); do
    for v in $VARIANTS; do
      n=${v%%=*}
      # shellcheck disable=SC2046
      env $(venv "$v") timeout 120 $B run $P --target opencl --dtype bf16 --time 10 $(nopat "$v") > "$R/run_${n}_$round.log" 2>&1
      # shellcheck disable=SC2046
      env NPUSIM_OPENCL_STATS=1 $(venv "$v") timeout 150 $B bench-llm $P $D --target opencl --dtype bf16 --positions 128 --repeats 10 $(nopat "$v") ${EXTRA:-} \
        --json "$R/bench_${n}_$round.json" > "$R/bench_${n}_$round.log" 2>&1
      echo "prefill $n r$round: run $(grep -E 'latency|error' "$R/run_${n}_$round.log" | tr '\n' ' ' | cut -c1-150) | $(grep -E 'first token|error' "$R/bench_${n}_$round.log" | tr '\n' ' ' | cut -c1-150)"
      grep -E '^opencl partition \([0-9]+ launches' "$R/bench_${n}_$round.log" | grep ': 3 runs' | head -1 | cut -c1-300
    done
  done
  pack
fi
if has profile; then
  for v in ${PROFILE_VARIANTS:-$VARIANTS}; do
    n=${v%%=*}
    # shellcheck disable=SC2046
    env $(venv "$v") timeout 120 $B run $P --target opencl --dtype bf16 --profile --runs 3 --trace "$R/trace_$n.json" $(nopat "$v") > "$R/profile_$n.log" 2>&1
    echo "profile $n:"; python3 tools/device/trace_kinds.py "$R/trace_$n.json" 2>&1 | tee "$R/kernels_$n.txt" | head -9
  done
  pack
fi
if has check; then
  timeout 200 $B generate $P $D --check --target opencl --dtype bf16 > "$R/check.log" 2>&1
  echo "check: $(grep -E 'greedy tokens|^PASS|^FAIL|rror' "$R/check.log" | tr '\n' ' ' | cut -c1-300)"


  pack
fi
if has records; then  # what docs/bench keeps: npusim bench --json of the prefill run, bench-llm's JSON with its time to first token
  timeout 200 $B bench $P --target opencl --dtype bf16 --repeats 20 --json "$R/h200_prefill128_bf16.json" > "$R/record_prefill.log" 2>&1
  timeout 200 $B bench-llm $P $D --target opencl --dtype bf16 --positions 128 --repeats 20 --json "$R/qwen15_prefill128_ttft_opencl.json" > "$R/record_ttft.log" 2>&1
  grep -hE 'latency|first token|rror' "$R"/record_*.log
  pack
fi
if has torch; then
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/torch_peer.py hf > "$R/torch.log" 2>&1; grep PEER "$R/torch.log"
fi
echo "total: $(( $(date +%s) - t0 )) s"
pack
