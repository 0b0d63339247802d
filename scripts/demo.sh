#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install the dependencies, build, then compile and
# run the bundled ResNet-18 and tiny Qwen2 models and show the results next to PyTorch's.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh --target npusim_cli
npusim=build/npusim
data=tests/data/models
echo
echo "== ResNet-18 (synthetic weights, calibrated BatchNorm), reference target, float32 =="
$npusim run "$data/resnet18"
echo
echo "== Qwen2 tiny: prefill 16 tokens + 8 teacher-forced decode steps with the KV cache =="
$npusim generate "$data/qwen2_tiny_prefill" "$data/qwen2_tiny_decode" --check
echo
echo "== Qwen2 tiny: free-running greedy generation =="
$npusim generate "$data/qwen2_tiny_prefill" "$data/qwen2_tiny_decode" --max-new-tokens 9
