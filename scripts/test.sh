#!/usr/bin/env bash
# Builds everything and runs the whole test suite (ctest). Extra arguments go to ctest, e.g.
#   scripts/test.sh -L e2e        # one label
#   scripts/test.sh -LE llm       # everything but the 1.5B-parameter LLM check
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd build
ctest -j"$(nproc)" --output-on-failure --timeout 1500 "$@"
