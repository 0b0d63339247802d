"""What to export, from a command-line spec: `torchvision:NAME` or `hf:PATH_OR_CONFIG_OR_FAMILY`.
No torch needed here."""

import json
import os
from dataclasses import dataclass


class SpecError(ValueError):
    """A model spec that names nothing exportable."""


# Small causal-LM configs made in code (random weights): family name -> (model_type, config fields).
# "tiny" ones are for tests and the device check; qwen2.5-1.5b and -72b are the real architectures' shapes.
_SMALL = dict(vocab_size=2048, hidden_size=256, intermediate_size=704, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=4096, rms_norm_eps=1e-6, hidden_act="silu")
FAMILIES = {
    "qwen2-tiny": ("qwen2", dict(_SMALL, rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False)),
    "llama-tiny": ("llama", dict(_SMALL, rope_theta=500000.0, tie_word_embeddings=False)),
    "qwen2.5-1.5b": ("qwen2", dict(vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                                   num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=32768,
                                   rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu",
                                   use_sliding_window=False)),
    # Qwen2.5-72B's shape (145 GB in bf16): export it with --weights synth --no-reference (meta device only)
    "qwen2.5-72b": ("qwen2", dict(vocab_size=152064, hidden_size=8192, intermediate_size=29568, num_hidden_layers=80,
                                  num_attention_heads=64, num_key_value_heads=8, max_position_embeddings=32768,
                                  rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, hidden_act="silu",
                                  use_sliding_window=False)),
}

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


@dataclass
class Spec:
    source: str  # "torchvision" or "hf"
    target: str  # torchvision model name; or the hf directory / config.json path / family name
    form: str = ""  # hf only: "dir" (config + weights), "config" (config.json, random weights), "family"

    @property
    def default_name(self) -> str:
        if self.source == "torchvision" or self.form == "family":
            return self.target
        path = os.path.abspath(self.target)
        return os.path.basename(os.path.dirname(path) if self.form == "config" else path.rstrip(os.sep))


def parse_spec(text: str) -> Spec:
    """'torchvision:resnet50' or 'hf:DIR' / 'hf:config.json' / 'hf:qwen2-tiny' -> Spec; SpecError otherwise."""
    source, sep, target = text.partition(":")
    source = source.strip().lower()
    if not sep or not target:
        raise SpecError(f"model spec '{text}' must look like torchvision:NAME or hf:PATH (a model directory, "
                        f"a config.json, or one of {', '.join(FAMILIES)})")
    if source in ("torchvision", "tv"):
        return Spec("torchvision", target)
    if source not in ("hf", "huggingface", "transformers"):
        raise SpecError(f"unknown model source '{source}' in '{text}': use torchvision:NAME or hf:PATH")
    if os.path.isdir(target):
        if not os.path.isfile(os.path.join(target, "config.json")):
            raise SpecError(f"{target} is a directory without a config.json: not a Hugging Face model directory")
        return Spec("hf", target, "dir")
    if os.path.isfile(target):
        return Spec("hf", target, "config")
    if target.lower() in FAMILIES:
        return Spec("hf", target.lower(), "family")
    raise SpecError(f"hf:{target} is neither a model directory, a config.json file, nor a known family "
                    f"({', '.join(FAMILIES)})")


def has_weights(model_dir: str) -> bool:
    return any(os.path.isfile(os.path.join(model_dir, f)) for f in WEIGHT_FILES)


def parse_overrides(items) -> dict:
    """['num_hidden_layers=4', 'rope_theta=1e4', 'tie_word_embeddings=false'] -> typed dict (JSON
    values where they parse, else strings)."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SpecError(f"config override '{item}' must be KEY=VALUE")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            low = value.strip().lower()
            out[key.strip()] = {"true": True, "false": False}.get(low, value)
    return out
