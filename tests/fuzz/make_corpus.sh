#!/usr/bin/env bash
# Regenerates the fixture seeds of the committed corpora in tests/fuzz/corpus/ from tests/data/
# (small cases only, so the fuzzers start fast); handmade_* seeds and fuzzer finds (found_*) are
# kept. Needs a built CLI: scripts/build.sh first.
# Usage: tests/fuzz/make_corpus.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
cli="${1:-build}/npusim"
out=tests/fuzz/corpus
mkdir -p "$out"/{ir_json,safetensors,synth_manifest,npubin,npy}
cp tests/data/npy/*.npy "$out/npy/"
for d in tests/data/ops/*/; do
  n=$(basename "$d")
  cp "$d/ir.json" "$out/ir_json/$n.json"
  [ -f "$d/synth.json" ] && cp "$d/synth.json" "$out/synth_manifest/$n.json"
  for f in weights io; do
    if [ -f "$d/$f.safetensors" ] && [ "$(stat -c %s "$d/$f.safetensors")" -le 1024 ]; then
      cp "$d/$f.safetensors" "$out/safetensors/${n}_$f.safetensors"
    fi
  done
done
cp tests/data/models/qwen2_tiny_prefill/synth.json "$out/synth_manifest/qwen2_tiny.json"
for n in relu conv_bn_relu conv_bn_relu_fp16 rmsnorm_bf16 silu_gate_mlp sdpa_causal index_copy_kv embedding cat_slice \
         unflatten_split arange_full rope_rotate_half masked_softmax; do
  "$cli" compile "tests/data/ops/$n/ir.json" -o "$out/npubin/$n.npubin" > /dev/null
done
"$cli" compile tests/data/ops/silu_gate_mlp/ir.json --force-fallback silu -o "$out/npubin/silu_gate_mlp_fallback.npubin" > /dev/null
"$cli" compile tests/data/ops/rmsnorm_bf16/ir.json --dtype bf16 -o "$out/npubin/rmsnorm_bf16_bf16.npubin" > /dev/null
du -sh "$out"/*
