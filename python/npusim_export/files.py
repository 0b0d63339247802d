"""The case-folder files that need no torch: JSON writers, the KV mapping, meta.json contents,
the prompt rule, and the cleaning that makes torch_ir attrs valid JSON.

A case folder (see tests/data/models/ and the fixtures README) holds ir.json, weights.safetensors,
io.safetensors, meta.json and, for an LLM decode graph, kv_mapping.json.
"""

import json
import math
import os
import shutil

# The decode graph's leading inputs: input_ids, attention_mask, position_ids, cache_position;
# the KV buffers follow, K then V per layer.
LM_FIXED_INPUTS = 4

M64 = (1 << 64) - 1


def fnv1a64(s: str) -> int:
    h = 0xCBF29CE484222325
    for b in s.encode():
        h ^= b
        h = (h * 0x100000001B3) & M64
    return h


# splitmix64's increment and multipliers (synth.py vectorises the same function over torch int64)
SPLITMIX_GOLDEN, SPLITMIX_C1, SPLITMIX_C2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def splitmix64(s: int) -> int:
    s = (s + SPLITMIX_GOLDEN) & M64
    z = s
    z = ((z ^ (z >> 30)) * SPLITMIX_C1) & M64
    z = ((z ^ (z >> 27)) * SPLITMIX_C2) & M64
    return z ^ (z >> 31)


def prompt_ids(name: str, length: int, vocab_size: int) -> list:
    """The fixtures' prompt rule: token i = splitmix64(fnv1a64('prompt:' + name) + i) % vocab."""
    h = fnv1a64("prompt:" + name)
    return [splitmix64(h + i) % vocab_size for i in range(length)]


def json_safe(value):
    """value as JSON can hold it: torch objects (dtype, device, layout, ...) become str(value),
    non-finite floats become "inf" / "-inf" / "nan" (JSON has no literal for them)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return str(value)


def clean_attrs(nodes) -> list:
    """Makes every node's attrs JSON-safe in place (torch_ir leaves torch.dtype etc. in attrs, which
    IR.save cannot write). Returns 'node.attr' for each non-finite float it had to stringify."""
    odd = []
    for node in nodes:
        for k, v in list(node.attrs.items()):
            if _has_nonfinite(v):
                odd.append(f"{node.name}.{k}")
            node.attrs[k] = json_safe(v)
    return odd


def _has_nonfinite(v) -> bool:
    if isinstance(v, float):
        return not math.isfinite(v)
    if isinstance(v, (list, tuple)):
        return any(_has_nonfinite(x) for x in v)
    return False


def op_histogram(op_types) -> dict:
    """{op_type: count}, most frequent first (the fixtures' meta.json op_histogram)."""
    h = {}
    for t in op_types:
        h[t] = h.get(t, 0) + 1
    return dict(sorted(h.items(), key=lambda kv: -kv[1]))


def kv_mapping(prefill_outputs, decode_inputs, decode_outputs, *, prefill_len: int, cache_len: int) -> dict:
    """kv_mapping.json: which prefill outputs (K, V per layer after the logits) fill which decode KV
    inputs, and which decode outputs are the updated caches. Arguments are tensor names in graph
    order: prefill outputs [logits, k0, v0, k1, v1, ...], decode inputs [4 fixed, k0, v0, ...],
    decode outputs [logits, k0', v0', ...]."""
    if len(prefill_outputs) < 3 or len(prefill_outputs) % 2 == 0:
        raise ValueError(f"prefill graph must output logits then K and V per layer; it has {len(prefill_outputs)} outputs")
    num_layers = (len(prefill_outputs) - 1) // 2
    if len(decode_inputs) != LM_FIXED_INPUTS + 2 * num_layers:
        raise ValueError(f"decode graph has {len(decode_inputs)} inputs; expected {LM_FIXED_INPUTS} + 2 x {num_layers} layers")
    if len(decode_outputs) != 1 + 2 * num_layers:
        raise ValueError(f"decode graph has {len(decode_outputs)} outputs; expected 1 + 2 x {num_layers} layers")
    layers = []
    for i in range(num_layers):
        layers.append({"layer": i,
                       "prefill_key_output": prefill_outputs[1 + 2 * i],
                       "prefill_value_output": prefill_outputs[2 + 2 * i],
                       "decode_key_input": decode_inputs[LM_FIXED_INPUTS + 2 * i],
                       "decode_value_input": decode_inputs[LM_FIXED_INPUTS + 2 * i + 1],
                       "decode_key_output": decode_outputs[1 + 2 * i],
                       "decode_value_output": decode_outputs[2 + 2 * i]})
    return {"num_layers": num_layers, "prefill_seq_len": prefill_len, "max_cache_len": cache_len, "layers": layers}


def lm_meta(*, config: dict, prefill_len: int, cache_len: int, tokens, dtype: str, weights: str, last_only: bool) -> dict:
    """meta.json of an LLM case (the same for its prefill and decode folders); tokens None: exported
    without a reference (no expected logits or tokens)."""
    return {"kind": "causal_lm",
            "config": json_safe(config),
            "prefill_len": prefill_len,
            "max_cache_len": cache_len,
            "greedy_tokens": list(tokens) if tokens is not None else None,
            "reference": f"fp32 compute, weights rounded to {dtype}" if tokens is not None else "none (--no-reference)",
            "weights": weights,
            "prefill_logits_saved": ("none" if tokens is None else "last position only" if last_only else "all positions"),
            "mask_rule": "additive float mask: 0 where key_pos <= query_pos else finfo(dtype).min",
            "prompt_rule": "splitmix64(fnv1a64('prompt:NAME') + i) % vocab"}


def vision_meta(*, top5, weights: str, input_rule: str) -> dict:
    return {"kind": "vision", "top5": list(top5), "weights": weights, "input_rule": input_rule}


def write_json(path: str, obj) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, allow_nan=False)
        f.write("\n")


# What `npusim generate --prompt` reads next to the cases (docs/tokenizer.md): the tokenizer, its
# chat template and the EOS ids.
TEXT_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json",
              "generation_config.json", "config.json")


def copy_text_files(src_dir, out_dir) -> list:
    """Copies the tokenizer and generation files of a Hugging Face model directory into out_dir;
    returns the names copied."""
    copied = []
    for name in TEXT_FILES:
        src = os.path.join(src_dir, name)
        if os.path.isfile(src):
            os.makedirs(out_dir, exist_ok=True)
            shutil.copyfile(src, os.path.join(out_dir, name))
            copied.append(name)
    return copied
