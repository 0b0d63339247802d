#!/usr/bin/env python3
"""Times HF `tokenizers` encoding the same ~1 MB text as bench/bench_tokenizer.cpp, on one thread.

  NPUSIM_TOKENIZER_BENCH_TEXT=/tmp/bench_text.txt build/bench/bench_tokenizer   # writes the text
  python3 bench/tokenizer_peer.py --text /tmp/bench_text.txt \
      --tokenizer tests/data/tokenizers/qwen2_style/tokenizer.json

Prints bytes/s for cold (new Tokenizer) and warm encodes, and the token count (compare with the
C++ benchmark's "tokens" counter when both use the same tokenizer.json).
"""
import argparse
import os
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one core, as the C++ benchmark

from tokenizers import Tokenizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--text", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    nbytes = len(text.encode("utf-8"))
    best_cold = best_warm = float("inf")
    n = 0
    for _ in range(args.repeat):
        tok = Tokenizer.from_file(args.tokenizer)
        t0 = time.perf_counter()
        n = len(tok.encode(text, add_special_tokens=False).ids)
        t1 = time.perf_counter()
        tok.encode(text, add_special_tokens=False)
        t2 = time.perf_counter()
        best_cold, best_warm = min(best_cold, t1 - t0), min(best_warm, t2 - t1)
    print(f"HF tokenizers: {nbytes} bytes, {n} tokens")
    print(f"  cold: {best_cold * 1e3:.1f} ms  {nbytes / best_cold / 1e6:.2f} MB/s")
    print(f"  warm: {best_warm * 1e3:.1f} ms  {nbytes / best_warm / 1e6:.2f} MB/s")


if __name__ == "__main__":
    main()
