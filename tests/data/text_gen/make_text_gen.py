#!/usr/bin/env python3
"""Writes the data of npusim's text-generation tests (tests/data/text_gen), on a machine with torch,
transformers and tokenizers (the GPU machine; no network):

  tokenizer.json         a Qwen2-style byte-level BPE (NFC + Qwen2 split regex + ByteLevel) trained
                         here with tokenizers, 1024 ids in all, so every id fits the tiny Qwen2's
                         1024-entry embedding (tests/data/models/qwen2_tiny_*)
  tokenizer_config.json  a Qwen2.5-style ChatML chat template (default system prompt), eos <|im_end|>
  generation_config.json eos_token_id [<|im_end|>, <|endoftext|>], as Qwen2.5-Instruct has
  expected.json          for each case: the prompt (text, or chat messages), HF's prompt ids
                         (tokenizer(text) / apply_chat_template), the greedy ids of HF transformers'
                         generate() on the tiny Qwen2 (weights of the fixture, fp32 compute, as the
                         fixture's reference) and their text (decode, skip_special_tokens=True)
  chat_render.json       chat templates of the Qwen2.5 / Qwen2 / plain ChatML / Llama 3 forms
                         rendered by transformers (jinja) for several conversations

Before writing, it checks that its model reproduces the fixture's reference prefill logits.

Usage: python3 tests/data/text_gen/make_text_gen.py [--out tests/data/text_gen]
"""
import argparse
import json
import os
import random
import sys

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tokenizers"))
from make_conformance import QWEN2, byte_level_tokenizer  # noqa: E402

# The Qwen2.5 template without its tool-calling branch (the part npusim renders).
QWEN25 = (
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "{%- else %}\n"
    "    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or (message.role == \"assistant\") %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n")
QWEN2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]

PLAIN = [("plain_ascii", "The quick brown fox", 12), ("plain_code", "def f(x):\n    return", 12),
         ("plain_cjk_emoji", "你好世界 café 😀", 12), ("plain_long", "the state of the world " * 6, 10)]
# (Qwen2.5's default system prompt alone takes 50+ ids of this small vocabulary: the tiny model's
# 64-position cache has no room for it, so these give a system prompt; chat_render.json covers it.)
CHATS = [("chat_multiline", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2=?\nAnd 3+3?"}], 8),
         ("chat_system", [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi!"}], 10)]
RENDER_CONVERSATIONS = [
    [{"role": "user", "content": "Hello"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi!"}],
    [{"role": "user", "content": "  padded \n"}, {"role": "assistant", "content": "\tok "},
     {"role": "user", "content": "next\n\nline"}],
    [{"role": "system", "content": "sys"}, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
     {"role": "user", "content": "q2 你好 😀"}],
    [{"role": "user", "content": ""}],
]


def tiny_model(device):
    meta = json.load(open(os.path.join(ROOT, "tests/data/models/qwen2_tiny_prefill/meta.json")))
    c = meta["config"]
    cfg = Qwen2Config(vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
                      num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
                      num_key_value_heads=c["num_key_value_heads"], max_position_embeddings=c["max_position_embeddings"],
                      rms_norm_eps=c["rms_norm_eps"], tie_word_embeddings=True, hidden_act="silu", use_sliding_window=False,
                      rope_theta=1000000.0)
    cfg._attn_implementation = "eager"
    model = Qwen2ForCausalLM(cfg)
    sd = load_file(os.path.join(ROOT, "tests/data/models/qwen2_tiny_prefill/weights.safetensors"))
    sd = {k[len("model."):]: v for k, v in sd.items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    # Non-persistent buffers (rotary inv_freq) as the fixture's model had them: rounded to bf16 by
    # its .to(bfloat16), then widened; the weights file stores them so.
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if name in sd:
                buf.copy_(sd[name].to(buf.dtype))
    missing = [k for k in missing if k != "lm_head.weight"]
    unexpected = [k for k in unexpected if not k.endswith("inv_freq")]
    if missing or unexpected:
        raise SystemExit(f"weights do not fit: missing {missing}, unexpected {unexpected}")
    model = model.float().eval().to(device)
    # The fixture's reference: prefill logits of its prompt (fp32 compute, bf16-rounded weights).
    io = load_file(os.path.join(ROOT, "tests/data/models/qwen2_tiny_prefill/io.safetensors"))
    ids = io["input_ids"].to(device)
    want = [v for k, v in io.items() if k != "input_ids"][0].float().to(device)
    with torch.no_grad():
        got = model(input_ids=ids).logits
    rel = float((got - want).norm() / want.norm())
    print(f"tiny Qwen2 vs the fixture's prefill logits: rel_l2 {rel:.3g}")
    if rel > 1e-4:
        raise SystemExit("the model does not reproduce the fixture")
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    rng = random.Random(2211)
    tok = byte_level_tokenizer(QWEN2, False, True, SPECIALS, 1024, rng)
    j = json.loads(tok.to_str())
    j["model"]["merges"] = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
    text = json.dumps(j, ensure_ascii=False, separators=(",", ":"))
    tok = Tokenizer.from_str(text)
    assert tok.get_vocab_size() <= 1024, tok.get_vocab_size()
    tok_path = os.path.join(a.out, "tokenizer.json")
    with open(tok_path, "w", encoding="utf-8") as f:
        f.write(text)
    ids_of = {s: tok.token_to_id(s) for s in SPECIALS}
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": "<|im_end|>",
                   "pad_token": "<|endoftext|>", "chat_template": QWEN25}, f, indent=1)
    eos = [ids_of["<|im_end|>"], ids_of["<|endoftext|>"]]
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": ids_of["<|endoftext|>"], "eos_token_id": eos, "do_sample": False}, f, indent=1)

    hf = PreTrainedTokenizerFast(tokenizer_file=tok_path, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                 chat_template=QWEN25)
    model = tiny_model(device)

    def greedy(prompt_ids, n, stop):
        x = torch.tensor([prompt_ids], device=device)
        with torch.no_grad():
            out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n, do_sample=False,
                                 eos_token_id=stop, pad_token_id=ids_of["<|endoftext|>"])
        return out[0, len(prompt_ids):].tolist()

    cases = []
    for name, prompt, n in PLAIN:
        cases.append({"name": name, "prompt": prompt, "prompt_ids": hf(prompt).input_ids, "max_new_tokens": n})
    for name, msgs, n in CHATS:
        rendered = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        cases.append({"name": name, "messages": msgs, "rendered": rendered,
                      "prompt_ids": hf(rendered, add_special_tokens=False).input_ids, "max_new_tokens": n})
    for c in cases:
        assert len(c["prompt_ids"]) + c["max_new_tokens"] <= 64, (c["name"], len(c["prompt_ids"]))
        c["eos"] = eos
        c["ids"] = greedy(c["prompt_ids"], c["max_new_tokens"], eos)
    # A stop id met on the way: the 4th id of the first case's greedy output.
    first = cases[0]
    stop_id = first["ids"][3]
    c = dict(first, name="plain_eos_override", eos=[stop_id])
    c["ids"] = greedy(c["prompt_ids"], c["max_new_tokens"], [stop_id])
    cases.append(c)
    for c in cases:
        c["stop"] = "eos" if c["ids"] and c["ids"][-1] in c["eos"] else "max_new_tokens"
        c["text"] = hf.decode(c["ids"], skip_special_tokens=True)
        print(f"{c['name']}: {len(c['prompt_ids'])} prompt ids -> {c['ids']} ({c['stop']}) {c['text']!r}")
    with open(os.path.join(a.out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"model": "tests/data/models/qwen2_tiny_{prefill,decode}", "reference":
                   "transformers generate(), greedy, fp32 compute on the fixture's weights", "cases": cases},
                  f, ensure_ascii=False, indent=1)

    # Chat rendering by transformers' jinja for each template form.
    templates = {"qwen2.5": (QWEN25, None), "qwen2": (QWEN2_TEMPLATE, None), "chatml": (CHATML, None),
                 "llama3": (LLAMA3_TEMPLATE, "<|begin_of_text|>")}
    rtok = PreTrainedTokenizerFast(tokenizer_file=tok_path)
    rtok.add_special_tokens({"additional_special_tokens": LLAMA3_SPECIALS})
    render = []
    for name, (tmpl, bos) in templates.items():
        for msgs in RENDER_CONVERSATIONS:
            for gen in (True, False):
                rtok.bos_token = bos
                text = rtok.apply_chat_template(msgs, chat_template=tmpl, tokenize=False, add_generation_prompt=gen)
                render.append({"template": name, "messages": msgs, "add_generation_prompt": gen, "text": text})
    with open(os.path.join(a.out, "chat_render.json"), "w", encoding="utf-8") as f:
        json.dump({"templates": {k: {"chat_template": v[0], "bos_token": v[1]} for k, v in templates.items()},
                   "cases": render}, f, ensure_ascii=False, indent=1)
    print(f"chat_render.json: {len(render)} renderings")


if __name__ == "__main__":
    main()
