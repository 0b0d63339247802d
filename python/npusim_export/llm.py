"""Hugging Face causal LMs as a prefill graph and a decode graph with a static KV cache (the
layout of the fixtures' qwen2_tiny_prefill / qwen2_tiny_decode; see the fixtures README)."""

import copy
import math
import os
import sys
import time
from contextlib import nullcontext

import torch

from . import files, spec, synth
from .core import ExportError, collect_weights, extract, log, pick_device, save_case, strict_fp32, torch_dtype


class FlatCache:
    """Duck-typed transformers cache: prefill returns the new K/V; decode writes them into the
    static buffers with out-of-place index_copy (in-place buffer writes vanish from torch_ir's IR)."""

    is_compileable = False

    def __init__(self, num_layers, cache_position, kv=None):
        self.cache_position = cache_position
        self.static = kv is not None
        self.k = list(kv[0::2]) if kv else [None] * num_layers
        self.v = list(kv[1::2]) if kv else [None] * num_layers
        self.layers = [None] * num_layers

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        if self.static:
            pos = self.cache_position
            self.k[layer_idx] = self.k[layer_idx].index_copy(2, pos, key_states)
            self.v[layer_idx] = self.v[layer_idx].index_copy(2, pos, value_states)
        else:
            self.k[layer_idx] = key_states
            self.v[layer_idx] = value_states
        return self.k[layer_idx], self.v[layer_idx]

    def get_seq_length(self, layer_idx=0):
        return 0

    def get_mask_sizes(self, cache_position, layer_idx=0):
        n = self.k[0].shape[-2] if self.static else cache_position.shape[0]
        return n, 0

    def __len__(self):
        return len(self.k)


class LMWrapper(torch.nn.Module):
    """(input_ids, attention_mask, position_ids, cache_position, *kv) -> (logits, k0, v0, k1, v1, ...)."""

    def __init__(self, model, num_layers, decode):
        super().__init__()
        self.model = model
        self.num_layers = num_layers
        self.decode = decode

    def forward(self, input_ids, attention_mask, position_ids, cache_position, *kv):
        cache = FlatCache(self.num_layers, cache_position, list(kv) if self.decode else None)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         cache_position=cache_position, past_key_values=cache, use_cache=True)
        res = [out.logits]
        for i in range(self.num_layers):
            res += [cache.k[i], cache.v[i]]
        return tuple(res)


def causal_mask(q_len, kv_len, q_start, device, dtype=torch.float32):
    """[1, 1, q_len, kv_len] additive mask: 0 where key <= q_start + query, else finfo(dtype).min."""
    i = torch.arange(q_len, device=device)[:, None] + q_start
    j = torch.arange(kv_len, device=device)[None, :]
    m = torch.zeros(q_len, kv_len, device=device, dtype=dtype)
    m[j > i] = torch.finfo(dtype).min
    return m[None, None]


def make_config(family, overrides=None):
    """A transformers config for a family in spec.FAMILIES, with overrides applied."""
    import transformers
    model_type, fields = spec.FAMILIES[family]
    return transformers.AutoConfig.for_model(model_type, **dict(fields, **(overrides or {})))


def _load_config(source, overrides):
    """(config, checkpoint directory or None) for a directory, a config.json, a family name or a
    PretrainedConfig."""
    import transformers
    if isinstance(source, transformers.PretrainedConfig):
        cfg = source
        for k, v in (overrides or {}).items():
            setattr(cfg, k, v)
        return cfg, None
    s = spec.parse_spec("hf:" + source) if isinstance(source, str) else None
    if s is None:
        raise ExportError(f"cannot export {type(source).__name__}: give a model directory, a config.json, a family "
                          "name, a PretrainedConfig or a PreTrainedModel")
    if s.form == "family":
        return make_config(s.target, overrides), None
    path = s.target if s.form == "dir" else os.path.dirname(os.path.abspath(s.target))
    if s.form == "config":
        cfg = transformers.AutoConfig.from_pretrained(s.target, **(overrides or {}))
        return cfg, None
    cfg = transformers.AutoConfig.from_pretrained(path, **(overrides or {}))
    return cfg, path if spec.has_weights(path) else None


def _text_dir(source):
    """The directory holding a checkpoint's tokenizer files, for a directory or config.json source."""
    if not isinstance(source, str):
        return None
    s = spec.parse_spec("hf:" + source)
    if s.form == "dir":
        return s.target
    if s.form == "config":
        return os.path.dirname(os.path.abspath(s.target))
    return None


def _model_class(cfg):
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING
    for arch in getattr(cfg, "architectures", None) or ():
        cls = getattr(transformers, arch, None)
        if cls is not None and arch.endswith("ForCausalLM"):
            return cls
    try:
        return MODEL_FOR_CAUSAL_LM_MAPPING[type(cfg)]
    except KeyError:
        raise ExportError(f"transformers has no causal-LM class for model type '{cfg.model_type}'") from None


def _no_autocast(cls):
    """HF rotary embeddings wrap their math in maybe_autocast(...), which torch.export turns into an
    opaque wrap_with_autocast op; replace it by a no-op context in the model's module."""
    mod = sys.modules.get(cls.__module__)
    if mod is not None and hasattr(mod, "maybe_autocast"):
        mod.maybe_autocast = lambda *a, **k: nullcontext()


def export_hf_causal_lm(source, out_dir, *, name=None, dtype="bf16", prefill_len=16, cache_len=64, decode_steps=8,
                        weights="default", seed=0, device=None, config_overrides=None, prefill_logits="auto",
                        reference=True):
    """Exports a Hugging Face causal LM into out_dir/prefill and out_dir/decode.

    source: a model directory (config.json + weights), a config.json path, a family name from
    spec.FAMILIES (e.g. "qwen2-tiny", "llama-tiny"), a PretrainedConfig, or a PreTrainedModel.
    weights: "default" (the checkpoint's or the given model's weights; random when there are none),
    "random" (the model's own initialisation under torch.manual_seed(seed)) or "synth" (the
    npusim-synth-v1 rule: a synth.json manifest instead of a weights file).
    reference: False skips PyTorch entirely (needs weights="synth"): only the meta-device graphs
    are built, so a model larger than the machine (a 72B shape) exports in seconds; io.safetensors
    then holds the prompt alone, and `npusim generate` runs it without --check.
    The prefill graph takes prefill_len tokens; the decode graph one token and KV buffers of
    cache_len positions. io.safetensors gets the prompt (the fixtures' rule), the prefill logits
    (all positions, or only the last when prefill_logits="last" or, with "auto", when they would
    exceed 64 MiB) and decode_steps greedy teacher-forced steps: decode_tokens, decode_logits.
    References are computed in float32 from the weights rounded to dtype.
    """
    import transformers
    t0 = time.time()
    device = pick_device(device)
    dt = torch_dtype(dtype)
    if prefill_len < 1 or decode_steps < 1:
        raise ExportError("prefill_len and decode_steps must be at least 1")
    if prefill_len + decode_steps > cache_len:
        raise ExportError(f"cache_len {cache_len} cannot hold prefill_len {prefill_len} + decode_steps {decode_steps} tokens")
    if weights not in ("default", "random", "synth"):
        raise ExportError(f"weights must be 'default', 'random' or 'synth', not '{weights}'")
    if not reference and weights != "synth":
        raise ExportError("without the reference no real model is built, so there are no weights to write: "
                          "use weights='synth' (--weights synth) with --no-reference")
    # a given model is copied: the export sets eager attention and casts the weights
    given = copy.deepcopy(source) if isinstance(source, transformers.PreTrainedModel) else None
    if given is not None:
        cfg, ckpt = given.config, None
    else:
        cfg, ckpt = _load_config(source, config_overrides)
    if name is None:
        name = spec.parse_spec("hf:" + source).default_name if isinstance(source, str) else cfg.model_type
    cfg._attn_implementation = "eager"
    cls = type(given) if given is not None else _model_class(cfg)
    _no_autocast(cls)
    L = cfg.num_hidden_layers
    kvh = cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    V = cfg.vocab_size
    log(f"{name}: {cls.__name__}, {L} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} heads "
        f"({kvh} KV, head_dim {hd}), vocab {V}; {dtype}, prefill {prefill_len}, cache {cache_len}")

    # IR of both graphs on the meta device
    with torch.device("meta"):
        meta_model = cls(cfg)
    meta_model = meta_model.to(dt).eval()
    m = "meta"
    pre_in = (torch.zeros(1, prefill_len, dtype=torch.long, device=m),
              torch.zeros(1, 1, prefill_len, prefill_len, dtype=dt, device=m),
              torch.arange(prefill_len, device=m)[None], torch.arange(prefill_len, device=m))
    log(f"{name}: extracting the prefill IR")
    ir_pre = extract(LMWrapper(meta_model, L, decode=False), pre_in, name + "_prefill")
    kv_m = [torch.zeros(1, kvh, cache_len, hd, dtype=dt, device=m) for _ in range(2 * L)]
    dec_in = (torch.zeros(1, 1, dtype=torch.long, device=m), torch.zeros(1, 1, 1, cache_len, dtype=dt, device=m),
              torch.zeros(1, 1, dtype=torch.long, device=m), torch.zeros(1, dtype=torch.long, device=m), *kv_m)
    log(f"{name}: extracting the decode IR")
    ir_dec = extract(LMWrapper(meta_model, L, decode=True), dec_in, name + "_decode")
    man = synth.manifest(LMWrapper(meta_model, L, decode=False), cfg) if weights == "synth" else None
    del meta_model
    log(f"{name}: IR prefill {len(ir_pre.nodes)} nodes, decode {len(ir_dec.nodes)} nodes ({time.time() - t0:.1f} s)")
    prompt_list = files.prompt_ids(name, prefill_len, V)
    if not reference:
        nbytes = sum(math.prod(t["shape"]) * torch.empty(0, dtype=getattr(torch, t["dtype"])).element_size()
                     for t in man["tensors"].values())
        meta = files.lm_meta(config=cfg.to_dict(), prefill_len=prefill_len, cache_len=cache_len, tokens=None,
                             dtype=str(dt), weights=f"{synth.RULE} ({nbytes / 1e9:.2f} GB when generated)",
                             last_only=True)
        _save_lm(out_dir, ir_pre, ir_dec, {ir_pre.graph_inputs[0].name: torch.tensor(prompt_list)[None]}, None, meta,
                 None, man, prefill_len, cache_len, source)
        log(f"{name}: no reference (--no-reference): the prompt is in prefill/io.safetensors; done in "
            f"{time.time() - t0:.1f} s")
        return {"prefill": ir_pre, "decode": ir_dec, "tokens": None, "dir": out_dir}

    # the real model, rounded to dtype; its weights under the IR's names
    if weights == "synth":
        with torch.device(device):
            real = cls(cfg)
        real = real.to(dt).eval()
        synth.fill(LMWrapper(real, L, decode=False), man)
        used = synth.RULE
    elif given is not None and weights == "default":
        real, used = given, "given model"
    elif ckpt is not None and weights == "default":
        log(f"{name}: loading weights from {ckpt}")
        real, used = cls.from_pretrained(ckpt, config=cfg), f"checkpoint {os.path.abspath(ckpt)}"
    else:
        torch.manual_seed(seed)
        real, used = cls(cfg), f"random ({cls.__name__} init, seed {seed})"
    log(f"{name}: weights: {used}")
    real = real.to(device=device, dtype=dt).eval()
    wts = None
    if man is None:
        wts, notes = collect_weights(ir_pre, LMWrapper(real, L, decode=False))
        for n in notes:
            log("  " + n)

    # reference in float32 from the rounded weights: prefill, then greedy teacher-forced decode steps
    strict_fp32()
    real = real.float()
    rp, rd = LMWrapper(real, L, decode=False), LMWrapper(real, L, decode=True)
    prompt = torch.tensor(prompt_list, device=device)[None]
    log(f"{name}: running PyTorch: prefill and {decode_steps} decode steps")
    with torch.no_grad():
        outs = rp(prompt, causal_mask(prefill_len, prefill_len, 0, device), torch.arange(prefill_len, device=device)[None],
                  torch.arange(prefill_len, device=device))
        logits_pre = outs[0]
        kv = []
        for t in outs[1:]:
            buf = torch.zeros(1, kvh, cache_len, hd, device=device)
            buf[:, :, :prefill_len] = t
            kv.append(buf)
        tokens = [int(logits_pre[0, -1].argmax())]
        step_logits = []
        for s in range(decode_steps):
            p = prefill_len + s
            o = rd(torch.tensor([[tokens[-1]]], device=device), causal_mask(1, cache_len, p, device),
                   torch.tensor([[p]], device=device), torch.tensor([p], device=device), *kv)
            kv = list(o[1:])
            step_logits.append(o[0][0, -1])
            tokens.append(int(o[0][0, -1].argmax()))
    log(f"{name}: greedy tokens {tokens}")

    last_only = prefill_logits == "last" or (prefill_logits == "auto" and prefill_len * V * 4 > 64 * 2**20)
    io_pre = {ir_pre.graph_inputs[0].name: prompt,
              ir_pre.graph_outputs[0].name: logits_pre[:, -1:] if last_only else logits_pre}
    io_dec = {"decode_tokens": torch.tensor(tokens), "decode_logits": torch.stack(step_logits)}
    meta = files.lm_meta(config=cfg.to_dict(), prefill_len=prefill_len, cache_len=cache_len, tokens=tokens,
                         dtype=str(dt), weights=used, last_only=last_only)
    _save_lm(out_dir, ir_pre, ir_dec, io_pre, io_dec, meta, wts, man, prefill_len, cache_len, source)
    log(f"{name}: done in {time.time() - t0:.1f} s")
    return {"prefill": ir_pre, "decode": ir_dec, "tokens": tokens, "dir": out_dir}


def _save_lm(out_dir, ir_pre, ir_dec, io_pre, io_dec, meta, wts, man, prefill_len, cache_len, source):
    """out_dir/prefill and out_dir/decode (io_dec None: no decode io.safetensors), the synth.json
    manifest in both when given, the KV mapping, and the tokenizer files of a checkpoint."""
    save_case(os.path.join(out_dir, "prefill"), ir_pre, io=io_pre, meta=meta, weights=wts)
    save_case(os.path.join(out_dir, "decode"), ir_dec, io=io_dec, meta=meta)
    if man is not None:
        for part in ("prefill", "decode"):
            files.write_json(os.path.join(out_dir, part, "synth.json"), man)
    mapping = files.kv_mapping([o.name for o in ir_pre.graph_outputs], [i.name for i in ir_dec.graph_inputs],
                               [o.name for o in ir_dec.graph_outputs], prefill_len=prefill_len, cache_len=cache_len)
    files.write_json(os.path.join(out_dir, "decode", "kv_mapping.json"), mapping)
    text_dir = _text_dir(source)
    if text_dir:
        copied = files.copy_text_files(text_dir, out_dir)
        if copied:
            log(f"copied {', '.join(copied)} from {text_dir} (npusim generate --prompt finds them there)")
        if "tokenizer.json" not in copied:
            log(f"no tokenizer.json in {text_dir}: npusim generate --prompt needs --tokenizer")
