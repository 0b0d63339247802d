#!/usr/bin/env python3
"""Model-zoo sweep (issue 27): export torchvision's classifiers and small configurations of the
decoder-only LLM families in transformers with torch_ir, compute PyTorch's outputs, run every model
on npusim's targets at float32 and at the model's half type, and write a table (Markdown) and the
raw results (JSON).

Needs torch, torchvision, transformers, the pytorch-ir package (`torch_ir`) and the fixtures'
generator `make_fixtures.py` (its synthetic weights, npusim-synth-v1, and its LLM wrapper with the
flat KV cache), so it runs on the device machine; `tools/model_zoo/device.sh` is the one call.

Resumable: exported cases stay in --cases (an ignored folder that survives between calls on a warm
machine) and results in --results; a model already exported or a run already recorded is skipped
unless --redo names it. Every subprocess has a time limit (--timeout), so one slow or hanging run
costs at most that.

  sweep.py --npusim build/npusim --make-fixtures .devdeps/make_fixtures.py --cases .cache/zoo \\
           --results $OUT/zoo.json --md $OUT/model-zoo.md [--only vision|llm|NAME,...] [--targets reference,cpu,opencl]
"""

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import traceback

# ---------------------------------------------------------------- the zoo

# name -> (torchvision builder name, input shape, half type). Random weights (weights=None);
# BatchNorm statistics calibrated as make_fixtures.make_vision does.
VISION = {
    "resnet18": ("resnet18", 224), "resnet50": ("resnet50", 224), "resnext50_32x4d": ("resnext50_32x4d", 224),
    "wide_resnet50_2": ("wide_resnet50_2", 224), "vgg11_bn": ("vgg11_bn", 224), "vgg16": ("vgg16", 224),
    "alexnet": ("alexnet", 224), "squeezenet1_0": ("squeezenet1_0", 224), "squeezenet1_1": ("squeezenet1_1", 224),
    "densenet121": ("densenet121", 224), "googlenet": ("googlenet", 224), "inception_v3": ("inception_v3", 299),
    "mobilenet_v2": ("mobilenet_v2", 224), "mobilenet_v3_small": ("mobilenet_v3_small", 224),
    "mobilenet_v3_large": ("mobilenet_v3_large", 224), "mnasnet1_0": ("mnasnet1_0", 224),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", 224), "efficientnet_b0": ("efficientnet_b0", 224),
    "efficientnet_v2_s": ("efficientnet_v2_s", 384), "regnet_y_400mf": ("regnet_y_400mf", 224),
    "regnet_x_400mf": ("regnet_x_400mf", 224), "convnext_tiny": ("convnext_tiny", 224), "vit_b_16": ("vit_b_16", 224),
    "swin_t": ("swin_t", 224), "swin_v2_t": ("swin_v2_t", 256), "maxvit_t": ("maxvit_t", 224),
}
VISION_KWARGS = {"googlenet": {"aux_logits": False, "init_weights": True}, "inception_v3": {"aux_logits": False, "init_weights": True}}

SMALL = dict(vocab_size=1024, hidden_size=128, intermediate_size=352, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=2048)


def _cfg(cls_name, **over):
    def make():
        import transformers
        kw = dict(SMALL)
        kw.update(over)
        cfg = getattr(transformers, cls_name)(**kw)
        # make_fixtures.make_lm reads these three names; some families spell them otherwise.
        for attr, fallback in (("num_key_value_heads", kw.get("num_key_value_heads")), ("num_hidden_layers", kw.get("num_hidden_layers")),
                               ("num_attention_heads", kw.get("num_attention_heads"))):
            if getattr(cfg, attr, None) is None:
                setattr(cfg, attr, fallback)
        return cfg
    return make


def _moe_cfg(cls_name, **over):
    """A mixture-of-experts config whose experts run transformers' `batched_mm` implementation: the
    static-shape form torch.export can trace (the default `eager` loop iterates over the experts
    the data selects, `grouped_mm` is CUDA-only `_grouped_mm`), and the one npusim's `moe` pattern
    fuses (docs/moe.md)."""
    base = _cfg(cls_name, **over)

    def make():
        cfg = base()
        cfg._experts_implementation = "batched_mm"
        return cfg
    return make


# name -> (config factory, model class, half type)
LLM = {
    "llama2": (_cfg("LlamaConfig", rope_theta=10000.0), "LlamaForCausalLM", "f16"),
    "llama3": (_cfg("LlamaConfig", rope_theta=500000.0, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 256}),
               "LlamaForCausalLM", "bf16"),
    "mistral": (_cfg("MistralConfig", sliding_window=None), "MistralForCausalLM", "bf16"),
    "qwen2": (_cfg("Qwen2Config", rope_theta=1000000.0, tie_word_embeddings=True), "Qwen2ForCausalLM", "bf16"),
    "qwen3": (_cfg("Qwen3Config", head_dim=32, tie_word_embeddings=True), "Qwen3ForCausalLM", "bf16"),
    "gemma": (_cfg("GemmaConfig", head_dim=32, hidden_act="gelu_pytorch_tanh"), "GemmaForCausalLM", "bf16"),
    "gemma2": (_cfg("Gemma2Config", head_dim=32, sliding_window=4096, query_pre_attn_scalar=32), "Gemma2ForCausalLM", "bf16"),
    "gemma3": (_cfg("Gemma3TextConfig", head_dim=32, sliding_window=4096, query_pre_attn_scalar=32), "Gemma3ForCausalLM", "bf16"),
    "phi3": (_cfg("Phi3Config", pad_token_id=0), "Phi3ForCausalLM", "bf16"),
    "gpt2": (_cfg("GPT2Config", n_embd=128, n_layer=2, n_head=4, n_inner=352, n_positions=2048), "GPT2LMHeadModel", "f16"),
    "opt": (_cfg("OPTConfig", ffn_dim=352, word_embed_proj_dim=128, enable_bias=True), "OPTForCausalLM", "f16"),
    "falcon": (_cfg("FalconConfig", num_kv_heads=2, new_decoder_architecture=True, parallel_attn=True, bias=False),
               "FalconForCausalLM", "bf16"),
    "stablelm": (_cfg("StableLmConfig"), "StableLmForCausalLM", "bf16"),
    "smollm": (_cfg("LlamaConfig", tie_word_embeddings=True, rope_theta=10000.0), "LlamaForCausalLM", "bf16"),
    "granite": (_cfg("GraniteConfig", embedding_multiplier=12.0, logits_scaling=8.0, residual_multiplier=0.22,
                     attention_multiplier=0.015625), "GraniteForCausalLM", "bf16"),
    # Mixture of experts (issue 40): 4 experts, top-2, every layer sparse.
    "qwen2_moe": (_moe_cfg("Qwen2MoeConfig", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=96,
                           shared_expert_intermediate_size=192, decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=False,
                           rope_theta=1000000.0), "Qwen2MoeForCausalLM", "bf16"),
    "mixtral": (_moe_cfg("MixtralConfig", num_local_experts=4, num_experts_per_tok=2, sliding_window=None), "MixtralForCausalLM", "bf16"),
    "olmoe": (_moe_cfg("OlmoeConfig", num_experts=4, num_experts_per_tok=2, norm_topk_prob=False), "OlmoeForCausalLM", "bf16"),
}
PREFILL, MAX_CACHE, DECODE_STEPS = 16, 64, 8

# ---------------------------------------------------------------- helpers


def load_make_fixtures(path):
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_fixtures"] = mod
    spec.loader.exec_module(mod)
    return mod


def last_error(lines):
    """The exception line of the last traceback in make_fixtures' log lines."""
    text = "\n".join(lines)
    tail = [ln for ln in text.splitlines() if ln.strip()]
    for ln in reversed(tail):
        if re.match(r"^[A-Za-z_.]*(Error|Exception|Unsupported)\b", ln.strip()) or ": " in ln and not ln.startswith(" "):
            return ln.strip()[:400]
    return tail[-1].strip()[:400] if tail else "unknown failure"


def run(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out + f"\n(timed out after {timeout} s)", time.time() - t0


def first_error_line(out):
    for ln in out.splitlines():
        if ln.startswith("npusim ") and "error" in ln.split(":")[0] or ln.startswith("error"):
            return ln.strip()[:600]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return lines[-1].strip()[:600] if lines else ""


def explain(npusim, case, timeout):
    """`npusim explain`'s coverage per target, or its error (every op npusim lacks, in one message)."""
    code, out, _ = run([npusim, "explain", case], timeout)
    if code != 0:
        return [first_error_line(out)]
    lines = out.splitlines()
    at = next((i for i, ln in enumerate(lines) if ln.startswith("coverage by target")), None)
    if at is None:
        return []
    block = []
    for ln in lines[at + 1:]:
        if not ln.startswith("  ") or ln.strip().startswith("partition"):
            break
        block.append(ln.strip())
    return block


def parse_vision(out):
    r = {}
    m = re.search(r"rel_l2 ([0-9.eE+-]+)", out)
    if m:
        r["rel_l2"] = float(m.group(1))
    m = re.search(r"top-5 npusim:\s+([0-9 ]+)\n\s+top-5 PyTorch:\s+([0-9 ]+)\s*\((\w+)", out)
    if m:
        r["top5"] = m.group(1).split()
        r["top5_ref"] = m.group(2).split()
        r["top5_same_set"] = sorted(r["top5"]) == sorted(r["top5_ref"])
    m = re.search(r"logits ranked (\d+) and (\d+) differ by ([0-9.eE+-]+), \w+ than the largest error \(max_abs ([0-9.eE+-]+)\)", out)
    if m:  # a top-5 mismatch: how close PyTorch's deciding pair was, next to the error
        r["tie"] = {"ranks": [int(m.group(1)), int(m.group(2))], "gap": float(m.group(3)), "max_abs": float(m.group(4))}
    m = re.search(r"latency: median ([0-9.]+) ms", out)
    if m:
        r["median_ms"] = float(m.group(1))
    r["pass"] = bool(re.search(r"^PASS", out, re.M)) and not re.search(r"^FAIL", out, re.M)
    m = re.search(r"(\d+) partition\(s\)", out)
    if m:
        r["partitions"] = int(m.group(1))
    return r


def parse_llm(out):
    r = {}
    m = re.search(r"greedy tokens: (\d+)/(\d+) match", out)
    if m:
        r["tokens_matched"], r["tokens"] = int(m.group(1)), int(m.group(2))
    cos = [float(x) for x in re.findall(r"cos ([0-9.]+)", out)]
    if cos:
        r["min_cos"] = min(cos)
    m = re.search(r"decode ([0-9.]+) ms/token", out)
    if m:
        r["decode_ms"] = float(m.group(1))
    m = re.search(r"time to first token ([0-9.]+) ms", out)
    if m:
        r["ttft_ms"] = float(m.group(1))
    r["pass"] = bool(re.search(r"^PASS", out, re.M)) and not re.search(r"^FAIL", out, re.M)
    return r


# ---------------------------------------------------------------- export


def exported(mf, n0, paths):
    """Whether make_fixtures wrote every case folder without logging a failure since line n0."""
    lines = mf.LOG[n0:]
    ok = all(os.path.isfile(os.path.join(p, "ir.json")) for p in paths) and not any("FAILED" in ln for ln in lines)
    return {"exported": ok, "error": None if ok else last_error(lines)}


# Models whose constructor computes with tensors (regnet's block widths: torch ops, then .item()),
# which under make_fixtures' `with torch.device("meta")` hold no data ("Cannot copy out of meta
# tensor"): built on the CPU, then moved to meta where the exporter asked for it.
BUILD_ON_CPU = ("regnet_y_400mf", "regnet_x_400mf")


def export_vision(mf, cases, name, dev):
    import torch
    import torchvision.models as tvm
    builder, side = VISION[name]
    kw = dict(weights=None, **VISION_KWARGS.get(name, {}))
    n0 = len(mf.LOG)

    def factory():
        if name not in BUILD_ON_CPU:
            return getattr(tvm, builder)(**kw)
        on_meta = torch.get_default_device().type == "meta"
        with torch.device("cpu"):
            m = getattr(tvm, builder)(**kw)
        return m.to("meta") if on_meta else m

    mf.make_vision(cases, dev, name, factory, shape=(1, 3, side, side))
    return exported(mf, n0, [os.path.join(cases, name)])


# Families whose modeling module make_lm does not reach with its maybe_autocast patch (its list:
# qwen2, llama, qwen3, gemma, phi3, mistral); the same patch, so that their rotary embedding
# exports as the other families' does.
AUTOCAST_PATCH = ("qwen2_moe", "mixtral", "olmoe")


def patch_autocast(modnames=AUTOCAST_PATCH):
    """make_lm's maybe_autocast patch for the modeling modules named (their rotary embedding then
    runs in the model's own type, as it exports)."""
    import importlib
    from contextlib import nullcontext
    for modname in modnames:
        try:
            mod = importlib.import_module(f"transformers.models.{modname}.modeling_{modname}")
            if hasattr(mod, "maybe_autocast"):
                mod.maybe_autocast = lambda **_k: nullcontext()
        except Exception:
            pass


def export_llm(mf, cases, name, dev):
    import torch
    patch_autocast()
    factory, cls, half = LLM[name]
    n0 = len(mf.LOG)
    mf.make_lm(cases, dev, name, factory, cls, prefill_len=PREFILL, max_cache=MAX_CACHE, decode_steps=DECODE_STEPS,
               dtype=torch.bfloat16 if half == "bf16" else torch.float16)
    return exported(mf, n0, [os.path.join(cases, name + s) for s in ("_prefill", "_decode")])


# What differs between the two kinds of model: how one is exported, which case `explain` reads,
# the half type, the command of one run, how its output is read, and the log line.
KINDS = {
    "vision": dict(models=VISION, export=export_vision, half=lambda name: "f16",
                   cases=lambda root, name: [os.path.join(root, name)],
                   command=lambda npusim, cs, t, dt: [npusim, "run", cs[0], "--target", t, "--dtype", dt] + ([] if t == "reference" else ["--time", "5"]),
                   parse=parse_vision,
                   summary=lambda r: f"rel_l2 {r.get('rel_l2')} top5 same set {r.get('top5_same_set')} median {r.get('median_ms')} ms"),
    "llm": dict(models=LLM, export=export_llm, half=lambda name: LLM[name][2],
                cases=lambda root, name: [os.path.join(root, name + "_prefill"), os.path.join(root, name + "_decode")],
                command=lambda npusim, cs, t, dt: [npusim, "generate", cs[0], cs[1], "--check", "--target", t, "--dtype", dt],
                parse=parse_llm,
                summary=lambda r: f"tokens {r.get('tokens_matched')}/{r.get('tokens')} min cos {r.get('min_cos')}"),
}


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npusim", required=True)
    ap.add_argument("--make-fixtures", required=True, help="path to make_fixtures.py")
    ap.add_argument("--cases", required=True, help="folder for the exported cases (kept between runs)")
    ap.add_argument("--results", required=True, help="results JSON (read first when it exists, rewritten after every run)")
    ap.add_argument("--md", help="write the Markdown table here")
    ap.add_argument("--only", default="", help="vision, llm, or model names, comma-separated")
    ap.add_argument("--targets", default="reference,cpu,opencl")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per npusim run")
    ap.add_argument("--redo", default="", help="model names whose export and runs are done again")
    ap.add_argument("--budget", type=float, default=0, help="stop starting new work after this many seconds (0: no limit)")
    ap.add_argument("--weights-dtypes", default="",
                    help="LLMs also with their linear weights quantized: q8,q4 (generate --check --weights-dtype, at the half type, "
                         "on each target; the quality table of docs/quantization.md)")
    a = ap.parse_args()
    t_start = time.time()

    def log(*x):
        print(*x, flush=True)

    results = {"vision": {}, "llm": {}}
    if os.path.isfile(a.results):
        with open(a.results) as f:
            results = json.load(f)

    def save():
        tmp = a.results + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        os.replace(tmp, a.results)

    only = set(x for x in a.only.split(",") if x)
    redo = set(x for x in a.redo.split(",") if x)
    targets = [t for t in a.targets.split(",") if t]
    wdtypes = [w for w in a.weights_dtypes.split(",") if w]
    want = lambda kind, name: not only or kind in only or name in only  # noqa: E731
    over_budget = lambda: a.budget > 0 and time.time() - t_start > a.budget  # noqa: E731

    import torch
    mf = load_make_fixtures(a.make_fixtures)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(a.cases, exist_ok=True)
    try:
        import torchvision
        import transformers
        results["versions"] = {"torch": torch.__version__, "torchvision": torchvision.__version__, "transformers": transformers.__version__}
    except Exception as e:  # recorded, and the families that need it fail with the reason
        results["versions"] = {"torch": torch.__version__, "import_error": str(e)}

    for kind, k in KINDS.items():
        for name in k["models"]:
            if not want(kind, name) or over_budget():
                continue
            rec = results[kind].setdefault(name, {})
            if name in redo:
                rec.clear()
            if "exported" not in rec:
                t0 = time.time()
                rec.update(k["export"](mf, a.cases, name, dev))
                rec["export_s"] = round(time.time() - t0, 1)
                save()
            if not rec["exported"]:
                log(f"{name}: not exported: {rec['error']}")
                continue
            cases = k["cases"](a.cases, name)
            if "explain" not in rec:
                rec["explain"] = explain(a.npusim, cases[0], a.timeout)
            runs = rec.setdefault("runs", {})
            # (target, dtype, weights dtype or ""): float runs, then LLMs with quantized weights.
            todo = [(t, dt, "") for t in targets for dt in ("f32", k["half"](name))]
            if kind == "llm":
                todo += [(t, k["half"](name), w) for w in wdtypes for t in targets]
            for t, dt, w in todo:
                key = f"{t}/{dt}" + (f"/{w}" if w else "")
                if key in runs or over_budget():
                    continue
                code, out, secs = run(k["command"](a.npusim, cases, t, dt) + (["--weights-dtype", w] if w else []), a.timeout)
                r = k["parse"](out)
                r["exit"], r["wall_s"] = code, round(secs, 1)
                if code != 0:
                    r["error"] = first_error_line(out)
                runs[key] = r
                log(f"{name:22s} {key:14s} exit {code} {'PASS' if r.get('pass') else 'FAIL'} {k['summary'](r)} {r.get('error', '')}")
                save()

    results["wall_s_last_call"] = round(time.time() - t_start, 1)
    save()
    if a.md:
        write_md(results, targets, a.md, wdtypes)
    return 0


def tie_note(r):
    """Why a top-5 moved: PyTorch's deciding pair of logits next to the largest error."""
    t = r.get("tie")
    if not t:
        return ""
    near = "a near-tie" if t["gap"] < t["max_abs"] else "not a near-tie"
    return f" (PyTorch's logits {t['ranks'][0]} and {t['ranks'][1]} {t['gap']:.1e} apart, max error {t['max_abs']:.1e}: {near})"


def cell(r, llm):
    if r is None:
        return "not run"
    if r.get("exit") == 124:
        return "timeout"
    if not r.get("pass"):
        # a run that finished outside the tolerance says by how much; an error says what stopped it
        if llm and r.get("min_cos") is not None:
            return f"FAIL (outside tolerance): {r.get('tokens_matched')}/{r.get('tokens')}, cos {r['min_cos']:.4f}"
        if not llm and r.get("rel_l2") is not None:
            return f"FAIL (outside tolerance): rel L2 {r['rel_l2']:.1e}" + ("" if r.get("top5_same_set", True) else ", top-5 differs" + tie_note(r))
        return "FAIL: " + (r.get("error") or "outside tolerance").replace("|", "/")[:120]
    if llm:
        return f"pass {r.get('tokens_matched')}/{r.get('tokens')}, cos {r.get('min_cos', 0):.4f}, {r.get('decode_ms', '-')} ms/tok"
    t = f", {r['median_ms']:.2f} ms" if "median_ms" in r else ""
    top = "" if r.get("top5_same_set", True) else ", top-5 differs"
    return f"pass {r.get('rel_l2', 0):.1e}{top}{t}"


def write_md(res, targets, path, wdtypes=()):
    keys = lambda half: [f"{t}/{d}" for t in targets for d in ("f32", half)]  # noqa: E731
    out = ["<!-- written by tools/model_zoo/sweep.py; edit the script, not this table -->", ""]
    v = res.get("versions", {})
    out.append("Versions: " + ", ".join(f"{k} {x}" for k, x in sorted(v.items())))
    out += ["", "## torchvision classifiers (random weights, batch 1)", "",
            "Cells: rel L2 of the logits against PyTorch (float32 on the GPU), whether the top-5 set equals PyTorch's, median latency.", ""]
    cols = keys("f16")
    out.append("| model | " + " | ".join(cols) + " |")
    out.append("|---|" + "---|" * len(cols))
    not_exported = []
    for name, rec in res.get("vision", {}).items():
        if not rec.get("exported"):
            not_exported.append((name, rec.get("error")))
            continue
        out.append(f"| {name} | " + " | ".join(cell(rec.get("runs", {}).get(k), False) for k in cols) + " |")
    out += ["", f"## Decoder-only LLMs (small configurations, prefill {PREFILL} + {DECODE_STEPS} decode steps, cache {MAX_CACHE})", "",
            "Cells: greedy tokens equal to PyTorch's (teacher-forced `generate --check`), the lowest logits cosine, decode time.", ""]
    out.append("| family | half | " + " | ".join(f"{t}/f32 | {t}/half" for t in targets) + " |")
    out.append("|---|---|" + "---|" * (2 * len(targets)))
    for name, rec in res.get("llm", {}).items():
        if not rec.get("exported"):
            not_exported.append((name, rec.get("error")))
            continue
        half = LLM.get(name, (None, None, "bf16"))[2]
        cells = [cell(rec.get("runs", {}).get(k), True) for k in keys(half)]
        out.append(f"| {name} | {half} | " + " | ".join(cells) + " |")
    if wdtypes:
        out += ["", "## Decoder-only LLMs with quantized linear weights (`generate --check --weights-dtype`, the half type)", "",
                "Cells as above, against PyTorch's float model: what the weight format loses (the tolerances are the format's).", ""]
        cols = [(t, w) for w in wdtypes for t in targets]
        out.append("| family | half | " + " | ".join(f"{t}/{w}" for t, w in cols) + " |")
        out.append("|---|---|" + "---|" * len(cols))
        for name, rec in res.get("llm", {}).items():
            if not rec.get("exported"):
                continue
            half = LLM.get(name, (None, None, "bf16"))[2]
            out.append(f"| {name} | {half} | " + " | ".join(cell(rec.get("runs", {}).get(f"{t}/{half}/{w}"), True) for t, w in cols) + " |")
    partial = [(n, rec.get("explain", [])) for kind in ("vision", "llm") for n, rec in res.get(kind, {}).items()
               if rec.get("exported") and any("100.0%" not in ln for ln in rec.get("explain", []))]
    if partial:
        out += ["", "## Coverage below 100% (`npusim explain`: nodes each target runs itself; the rest falls back)", ""]
        out += [f"- {n}: " + "; ".join(e) for n, e in partial]
    if not_exported:
        out += ["", "## Not exported by torch_ir (the exporter's error)", ""]
        out += [f"- {n}: `{(e or '').replace('`', '')}`" for n, e in not_exported]
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
