"""npusim-export SPEC OUT: a torchvision classifier or a Hugging Face causal LM as npusim case folders."""

import argparse
import os
import sys
import time

from . import __version__
from .spec import FAMILIES, SpecError, parse_overrides, parse_spec

EPILOG = f"""specs:
  torchvision:NAME     a torchvision classification model (resnet50, mobilenet_v2, vit_b_16, ...)
  hf:DIR               a Hugging Face causal-LM directory (config.json + weights)
  hf:CONFIG.json       a causal-LM config; random weights
  hf:FAMILY            a small config made in code, random weights: {', '.join(FAMILIES)}

then:
  npusim run OUT --target cpu                                  (torchvision)
  npusim generate OUT/prefill OUT/decode --check --target cpu  (hf)
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="npusim-export", description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"npusim-export {__version__}")
    p.add_argument("spec", help="torchvision:NAME or hf:DIR|CONFIG.json|FAMILY")
    p.add_argument("out", help="output folder (hf: gets prefill/ and decode/)")
    p.add_argument("--weights", choices=("default", "random", "synth"), default="default",
                   help="default: pretrained (torchvision, falls back to random when they cannot be fetched) or the "
                        "checkpoint's (hf directory); random: the model's own initialisation; synth (hf): the "
                        "npusim-synth-v1 rule, a synth.json instead of a weights file (default: %(default)s)")
    p.add_argument("--dtype", choices=("f32", "bf16", "f16"), default=None,
                   help="weights and graph dtype (default: f32 for torchvision, bf16 for hf)")
    p.add_argument("--seed", type=int, default=0, help="seed for random weights and the sample input (default 0)")
    p.add_argument("--device", default="auto", help="where PyTorch computes the reference: auto, cpu, cuda (default auto)")
    p.add_argument("--name", default=None, help="hf: model name in the IR and meta.json, also seeds the prompt "
                                                "(default: the family or directory name)")
    v = p.add_argument_group("torchvision")
    v.add_argument("--input-shape", default="1,3,224,224", help="sample input shape (default 1,3,224,224)")
    h = p.add_argument_group("hf")
    h.add_argument("--prefill-len", type=int, default=16, help="prompt tokens of the prefill graph (default 16)")
    h.add_argument("--cache-len", type=int, default=64, help="KV-cache positions of the decode graph (default 64)")
    h.add_argument("--decode-steps", type=int, default=8, help="greedy reference decode steps (default 8)")
    h.add_argument("--prefill-logits", choices=("auto", "all", "last"), default="auto",
                   help="prefill logits to store: all positions, the last, or auto (last when all exceed 64 MiB)")
    h.add_argument("--no-reference", action="store_true",
                   help="skip PyTorch: only the meta-device graphs, synth.json and the prompt (needs --weights synth); "
                        "for shapes larger than this machine, e.g. hf:qwen2.5-72b/config.json")
    h.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, e.g. --config num_hidden_layers=4 (repeatable)")
    return p


def parse_shape(text: str):
    try:
        shape = tuple(int(x) for x in text.replace("x", ",").split(",") if x.strip())
    except ValueError:
        shape = ()
    if not shape or any(d <= 0 for d in shape):
        raise SpecError(f"--input-shape '{text}' must be positive integers, e.g. 1,3,224,224")
    return shape


def parse_args(argv=None):
    """Parsed arguments with .spec (a Spec), .input_shape (a tuple) and .config (a dict) resolved;
    exits with status 2 on a bad argument, like argparse."""
    p = build_parser()
    a = p.parse_args(argv)
    try:
        a.spec = parse_spec(a.spec)
        a.input_shape = parse_shape(a.input_shape)
        a.config = parse_overrides(a.config)
    except SpecError as e:
        p.error(str(e))
    if a.spec.source == "torchvision" and (a.weights == "synth" or a.no_reference):
        p.error("--weights synth and --no-reference are for hf: specs (torchvision classifiers are small)")
    if a.no_reference and a.weights != "synth":
        p.error("--no-reference builds no real model, so it has no weights to write: add --weights synth")
    if a.dtype is None:
        a.dtype = "f32" if a.spec.source == "torchvision" else "bf16"
    return a


def run(a) -> int:
    try:
        from .core import ExportError
    except ImportError as e:
        print(f"npusim-export: error: PyTorch is needed to export ({e}); install torch (and torchvision or "
              "transformers) first", file=sys.stderr)
        return 1
    t0 = time.time()
    try:
        if a.spec.source == "torchvision":
            from .vision import export_torchvision
            export_torchvision(a.spec.target, a.out, weights=a.weights, dtype=a.dtype, input_shape=a.input_shape,
                               seed=a.seed, device=a.device)
            hint = f"npusim run {a.out} --target cpu"
        else:
            from .llm import export_hf_causal_lm
            export_hf_causal_lm(a.spec.target, a.out, name=a.name, dtype=a.dtype, prefill_len=a.prefill_len,
                                cache_len=a.cache_len, decode_steps=a.decode_steps, weights=a.weights, seed=a.seed,
                                device=a.device, config_overrides=a.config, prefill_logits=a.prefill_logits,
                                reference=not a.no_reference)
            hint = (f"npusim generate {os.path.join(a.out, 'prefill')} {os.path.join(a.out, 'decode')} "
                    + ("--target cpu" if a.no_reference else "--check --target cpu"))
    except ExportError as e:
        print(f"npusim-export: error: {e}", file=sys.stderr)
        return 1
    except ImportError as e:
        print(f"npusim-export: error: {e} (torchvision exports need torchvision, hf exports transformers)",
              file=sys.stderr)
        return 1
    print(f"exported {a.out} in {time.time() - t0:.1f} s; check it with: {hint}", flush=True)
    return 0


def main(argv=None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
