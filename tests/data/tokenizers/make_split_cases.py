#!/usr/bin/env python3
"""Writes split_cases.json: Python's NFC (unicodedata) and the GPT-2, Qwen2 and Llama 3 pre-tokenizer regexes applied by the
`regex` package (which has \\p{L}, \\p{N}, (?i:...) as Oniguruma does) to the conformance test
strings, so the hand-written matchers in include/npusim/text/split_pattern.hpp are checked against
a real regex engine without HF tokenizers. Needs only `regex` (no network, no tokenizers).

Usage: python3 tests/data/tokenizers/make_split_cases.py [--out tests/data/tokenizers/split_cases.json]
"""
import argparse
import json
import os
import random
import sys
import types
import unicodedata

import regex

# make_conformance.py imports `tokenizers` at the top; only its corpus and test strings are used here.
if "tokenizers" not in sys.modules:
    stub = types.ModuleType("tokenizers")
    for name in ("Regex", "Tokenizer", "decoders", "models", "normalizers", "pre_tokenizers", "processors", "trainers"):
        setattr(stub, name, None)
    sys.modules["tokenizers"] = stub
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_conformance as mc  # noqa: E402

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "split_cases.json"))
    args = ap.parse_args()
    rng = random.Random(21)
    strings = mc.test_strings(rng, ["<|endoftext|>"])
    lines = mc.corpus(random.Random(22))
    strings += [rng.choice(lines) + rng.choice(mc.SPACES) + rng.choice(lines) for _ in range(60)]
    strings += ["a\x1cb", "\x1c\x1d", " \x1c x"]  # U+001C..1F: whitespace to Python's str.isspace, not to \s
    # NFC material: marks in both orders, Hangul jamo, exclusions, singletons, NFD of whole scripts.
    strings += ["a\u0302\u0323", "a\u0323\u0302", "\u1100\u1161\u11a8\u1100\u1161", "\uac00\u11a8", "\u0958\u0915\u093c",
                "\u212b\u2126\u1e9b\u0323", "q\u0307\u0323", "\u0300a", "e\u0301\u0301", "\u0f73\u0f75",
                unicodedata.normalize("NFD", "Tiếng Việt có dấu, Ελληνικά ἄλφα, Ŀ, ǅ, 한국어 문장, ﬁ ﬀ")]
    strings.append(unicodedata.normalize("NFD", "".join(chr(c) for c in range(0xC0, 0x250))))
    strings.append(unicodedata.normalize("NFD", "".join(chr(c) for c in range(0x1E00, 0x1FFF))))
    cases = []
    for s in strings:
        cases.append({"text": s, "nfc": unicodedata.normalize("NFC", s), **{name: regex.findall(p, s) for name, p in
                                    (("gpt2", GPT2), ("qwen2", mc.QWEN2), ("llama3", mc.LLAMA3))}})
        for name in ("gpt2", "qwen2", "llama3"):
            assert "".join(cases[-1][name]) == s, (name, s)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"regex_version": regex.__version__, "unicode_version": unicodedata.unidata_version, "cases": cases}, f, ensure_ascii=False, separators=(",", ":"))
    print(f"{len(cases)} strings -> {args.out}")


if __name__ == "__main__":
    main()
