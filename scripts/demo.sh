#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install the dependencies, build the CLI, then show
# what npusim does with the bundled fixtures (tests/data/models, each exported from PyTorch with
# PyTorch's outputs): ResNet-18 compiled to a .npubin and run from it next to PyTorch's top-5; the
# same model on every target this build has, with its latency; NPU estimates next to the measured
# CPU time; tiny Qwen2 from a text prompt to text, and checked against PyTorch, with float and
# quantized weights. Every header names what runs, and each command is printed before its output.
# Nothing needs the network after install-deps; a step that fails stops the demo with its output.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh --target npusim_cli

npusim=build/npusim
models=tests/data/models
r18=$models/resnet18
qwen=("$models/qwen2_tiny_prefill" "$models/qwen2_tiny_decode")
out=build/demo  # what the demo writes: the .npubin, and the logs of the steps it condenses
mkdir -p "$out"
start=$SECONDS

# A section: its title, then lines that say more.
header() {
  printf '\n== %s ==\n' "$1"
  shift
  [ $# -eq 0 ] || printf '%s\n' "$@"
}
# Prints a command line, then runs it (its output as it comes).
show() {
  printf '$ %s\n' "$*"
  "$@"
}
# Prints a command line and runs it into a log; when it fails, prints the log and stops the demo.
logged() {
  local log=$1
  shift
  printf '$ %s\n' "$*"
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    echo "demo: failed: $*" >&2
    exit 1
  fi
}

header "ResNet-18 compiled to a .npubin, then run from that file alone, next to PyTorch's top-5 (cpu target, float32)" \
  "($r18: synthetic weights, BatchNorm calibrated; io.safetensors holds PyTorch's input and output)"
show $npusim compile "$r18" --target cpu --dtype f32 --embed-weights -o "$out/resnet18.npubin"
show $npusim run "$out/resnet18.npubin" --input "x=$r18/io.safetensors" --expected "$r18/io.safetensors"

header "The same ResNet-18 on each target of this build (float32): latency, and the error to PyTorch's output" \
  "(run --target T --time N compiles for T, checks the output against PyTorch's, then times N more runs)"
targets=$($npusim targets | awk '{ print $1 }')
cpu_ms=""
for t in $targets; do
  runs=5
  if [ "$t" = cpu ]; then runs=50; fi
  if [ "$t" = opencl ]; then
    # PoCL comes with install-deps; a machine can still have no OpenCL device.
    devices=$($npusim devices 2>&1 || true)
    if ! grep -qE '^[0-9]+ ' <<<"$devices"; then
      printf '  %-10s skipped: no OpenCL device (npusim devices: %s)\n' "$t" "$(head -n 1 <<<"$devices")"
      continue
    fi
  fi
  logged "$out/run_$t.log" $npusim run "$r18" --target "$t" --dtype f32 --time "$runs"
  awk -v t="$t" '
    /^target: / { sub(/^target: [^ ]+ \([^)]*\)/, ""); more = $0 }  # a plan with fallback partitions says so
    /^device: / { sub(/^device: /, ""); more = more "; device: " $0 }
    /^  output / { for (i = 1; i < NF; ++i) if ($i == "rel_l2") rel = $(i + 1) }
    /top-5 PyTorch:/ { top = $NF == "(match)" ? "the same" : "DIFFERENT" }
    /^latency: / { med = $3; lo = $6; n = $(NF - 1) }
    END { printf "  %-10s %s ms median (min %s, %s runs); vs PyTorch: rel L2 %s, top-5 %s%s\n", t, med, lo, n, rel, top, more }
  ' "$out/run_$t.log"
  if [ "$t" = cpu ]; then cpu_ms=$(awk '/^latency: / { print $3 }' "$out/run_$t.log"); fi
done

header "npusim simulate: the same ResNet-18 on two bundled NPUs (data/npu/), next to the cpu time measured above" \
  "(estimated from each description's MAC array, SRAM and DMA, in a dtype the NPU has: rk3588 in f16; hailo8 has int8 only," \
  " so its estimate is for the model quantized to int8, as its note says)"
simulate() {
  local npu=$1
  shift
  logged "$out/simulate_$npu.log" $npusim simulate "$r18" --npu "$npu" "$@" --top 0
  grep -E '^(NPU |note: |estimate: |kernels: )' "$out/simulate_$npu.log" | sed 's/^/  /'
}
simulate rk3588 --dtype f16
simulate hailo8
echo "  measured on this machine, above: cpu target, float32, $cpu_ms ms (median)"

prompt="The quick brown fox"
header "Tiny Qwen2 from a text prompt to text streamed as it is generated (cpu target, float32)" \
  "(2 layers, random weights: the text is noise, and must be the text transformers' generate() gives for this prompt," \
  " tests/data/text_gen/expected.json; the tokenizer is the bundled test one, tests/data/text_gen)"
printf '$ %s generate %s %s --target cpu --tokenizer tests/data/text_gen --prompt "%s" --max-new-tokens 12\n' "$npusim" "${qwen[@]}" "$prompt"
printf 'text: '
if ! $npusim generate "${qwen[@]}" --target cpu --tokenizer tests/data/text_gen --prompt "$prompt" --max-new-tokens 12 \
  2>"$out/generate.log" | tee "$out/generate.txt"; then
  cat "$out/generate.log"
  echo "demo: generate failed" >&2
  exit 1
fi
grep -E '^(tokenizer|prompt|stopped|time to first token)' "$out/generate.log" | sed 's/^/  /'
text=$(cat "$out/generate.txt")
if ! grep -qF "\"text\": \"$text\"" tests/data/text_gen/expected.json; then
  echo "demo: that is not transformers' text for this prompt (tests/data/text_gen/expected.json)" >&2
  exit 1
fi
echo "  = transformers' text for this prompt (tests/data/text_gen/expected.json, case plain_ascii)"

header "Tiny Qwen2 checked against PyTorch (cpu target, float32)" \
  "(prefill of 16 tokens, then 8 teacher-forced decode steps through the KV cache: logits and greedy tokens compared)"
show $npusim generate "${qwen[@]}" --target cpu --check

header "The same check with the linear weights quantized when compiled (cpu target), one line each" \
  "(--weights-dtype q8 / q4: GGML's q8_0 / q4_0, blocks of 32 weights; the tolerances are the format's)"
for q in q8 q4; do
  logged "$out/check_$q.log" $npusim generate "${qwen[@]}" --target cpu --weights-dtype "$q" --check
  awk '
    /^weights quantized to / { f = $4; sub(/:$/, "", f); for (i = 1; i < NF; ++i) if ($i == ">=") need = $(i + 1); sub(/,$/, "", need) }
    /^prefill / || /^step / { for (i = 1; i < NF; ++i) if ($i == "cos" && (lo == "" || $(i + 1) + 0 < lo + 0)) lo = $(i + 1) }
    /^greedy tokens: / { tok = $3; nt = $NF; sub(/\)$/, "", nt) }
    /^(PASS|FAIL)$/ { r = $1 }
    END { printf "  %s: logits cosine to PyTorch >= %s (needs %s), greedy tokens %s the same (needs %s): %s\n", f, lo, need, tok, nt, r }
  ' "$out/check_$q.log"
done

echo
echo "demo: done in $((SECONDS - start)) s after the build; the .npubin and the logs are in $out/"
