"""Tests of npusim_export. Those that need torch / torch_ir / torchvision / transformers are
skipped (with the reason) where they are missing; the rest (spec and argument parsing, the
kv_mapping / meta writers, the prompt rule against the bundled fixtures) run everywhere.

    python3 -m unittest discover -s python/tests -v
"""

import importlib.util
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
if os.path.isdir(os.path.join(ROOT, ".devdeps", "pyir")):  # torch_ir as the device scripts provide it
    sys.path.append(os.path.join(ROOT, ".devdeps", "pyir"))

from npusim_export import cli, files, spec  # noqa: E402

MODELS = os.path.join(ROOT, "tests", "data", "models")


def have(*modules):
    return all(importlib.util.find_spec(m) is not None for m in modules)


HAVE_TORCH = have("torch", "safetensors") and have("torch_ir")
NEED_TORCH = "torch not installed: needs torch, safetensors and torch_ir (pytorch-ir)"


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} without numpy or torch."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = (v["dtype"], v["shape"], data[a:b])
    return out


def load_json(*parts):
    with open(os.path.join(*parts)) as f:
        return json.load(f)


class SpecTest(unittest.TestCase):
    def test_torchvision(self):
        s = spec.parse_spec("torchvision:resnet50")
        self.assertEqual((s.source, s.target, s.default_name), ("torchvision", "resnet50", "resnet50"))
        self.assertEqual(spec.parse_spec("tv:mobilenet_v2").source, "torchvision")

    def test_hf_family(self):
        s = spec.parse_spec("hf:qwen2-tiny")
        self.assertEqual((s.source, s.form, s.default_name), ("hf", "family", "qwen2-tiny"))
        self.assertEqual(spec.parse_spec("hf:LLAMA-TINY").target, "llama-tiny")

    def test_hf_paths(self):
        with tempfile.TemporaryDirectory() as d:
            model = os.path.join(d, "my-model")
            os.makedirs(model)
            with self.assertRaisesRegex(spec.SpecError, "without a config.json"):
                spec.parse_spec("hf:" + model)
            with open(os.path.join(model, "config.json"), "w") as f:
                f.write("{}")
            s = spec.parse_spec("hf:" + model)
            self.assertEqual((s.form, s.default_name), ("dir", "my-model"))
            self.assertFalse(spec.has_weights(model))
            open(os.path.join(model, "model.safetensors"), "wb").close()
            self.assertTrue(spec.has_weights(model))
            s = spec.parse_spec("hf:" + os.path.join(model, "config.json"))
            self.assertEqual((s.form, s.default_name), ("config", "my-model"))

    def test_bad_specs(self):
        for bad in ("resnet50", "torchvision:", "onnx:model", "hf:no-such-family-or-path"):
            with self.assertRaises(spec.SpecError, msg=bad):
                spec.parse_spec(bad)

    def test_overrides(self):
        self.assertEqual(spec.parse_overrides(["num_hidden_layers=4", "rope_theta=1e4", "tie_word_embeddings=False",
                                               "hidden_act=gelu", "x=[1, 2]"]),
                         {"num_hidden_layers": 4, "rope_theta": 1e4, "tie_word_embeddings": False,
                          "hidden_act": "gelu", "x": [1, 2]})
        with self.assertRaises(spec.SpecError):
            spec.parse_overrides(["no_equals_sign"])


class CliTest(unittest.TestCase):
    def test_defaults(self):
        a = cli.parse_args(["torchvision:resnet50", "out"])
        self.assertEqual((a.spec.target, a.out, a.weights, a.dtype, a.input_shape), ("resnet50", "out", "default", "f32",
                                                                                      (1, 3, 224, 224)))
        a = cli.parse_args(["hf:qwen2-tiny", "out", "--prefill-len", "32", "--cache-len", "128", "--dtype", "f16",
                            "--config", "num_hidden_layers=3", "--weights", "random"])
        self.assertEqual((a.prefill_len, a.cache_len, a.decode_steps, a.dtype, a.weights, a.config),
                         (32, 128, 8, "f16", "random", {"num_hidden_layers": 3}))
        self.assertEqual(cli.parse_args(["hf:llama-tiny", "o"]).dtype, "bf16")
        self.assertEqual(cli.parse_args(["tv:vit_b_16", "o", "--input-shape", "2x3x224x224"]).input_shape, (2, 3, 224, 224))

    def test_errors_exit_2(self):
        for argv in (["nothing", "out"], ["torchvision:resnet50", "out", "--dtype", "f64"],
                     ["torchvision:resnet50", "out", "--input-shape", "1,a"], ["hf:qwen2-tiny"]):
            with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as cm:
                cli.parse_args(argv)
            self.assertEqual(cm.exception.code, 2, argv)

    def test_synth_and_no_reference_flags(self):
        a = cli.parse_args(["hf:qwen2-tiny", "out", "--weights", "synth", "--no-reference"])
        self.assertEqual((a.weights, a.no_reference), ("synth", True))
        for argv in (["hf:qwen2-tiny", "out", "--no-reference"], ["torchvision:resnet18", "out", "--weights", "synth"]):
            with redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as cm:
                cli.parse_args(argv)
            self.assertEqual(cm.exception.code, 2, argv)
            self.assertIn("synth", err.getvalue())

    def test_help_without_torch(self):
        r = subprocess.run([sys.executable, "-m", "npusim_export", "--help"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("torchvision:NAME", r.stdout)
        self.assertIn("npusim generate", r.stdout)


class FilesTest(unittest.TestCase):
    """The writers reproduce the bundled fixtures (made by tools that share this logic)."""

    def test_kv_mapping_matches_fixture(self):
        pre = load_json(MODELS, "qwen2_tiny_prefill", "ir.json")
        dec = load_json(MODELS, "qwen2_tiny_decode", "ir.json")
        want = load_json(MODELS, "qwen2_tiny_decode", "kv_mapping.json")
        got = files.kv_mapping([o["name"] for o in pre["graph_outputs"]], [i["name"] for i in dec["graph_inputs"]],
                               [o["name"] for o in dec["graph_outputs"]], prefill_len=want["prefill_seq_len"],
                               cache_len=want["max_cache_len"])
        self.assertEqual(got, want)

    def test_kv_mapping_rejects_bad_graphs(self):
        with self.assertRaises(ValueError):
            files.kv_mapping(["logits", "k0"], ["a"] * 6, ["l", "k", "v"], prefill_len=4, cache_len=8)
        with self.assertRaises(ValueError):
            files.kv_mapping(["logits", "k0", "v0"], ["a"] * 5, ["l", "k", "v"], prefill_len=4, cache_len=8)

    def test_op_histogram_matches_fixture(self):
        for case in ("resnet18", "qwen2_tiny_prefill", "qwen2_tiny_decode"):
            ir = load_json(MODELS, case, "ir.json")
            want = load_json(MODELS, case, "meta.json")["op_histogram"]
            self.assertEqual(files.op_histogram(n["op_type"] for n in ir["nodes"]), want, case)

    def test_prompt_rule_matches_fixture(self):
        pre = load_json(MODELS, "qwen2_tiny_prefill", "ir.json")
        dtype, shape, raw = read_safetensors(os.path.join(MODELS, "qwen2_tiny_prefill", "io.safetensors"))[
            pre["graph_inputs"][0]["name"]]
        self.assertEqual((dtype, shape), ("I64", [1, 16]))
        ids = list(struct.unpack(f"<{len(raw) // 8}q", raw))
        self.assertEqual(ids, files.prompt_ids("qwen2_tiny", 16, 1024))

    def test_json_safe(self):
        class Dtype:
            def __str__(self):
                return "torch.float32"

        class Node:
            name = "n"
            attrs = {"dtype": Dtype(), "dims": (1, 2), "min": float("-inf"), "p": 0.5, "keepdim": True, "x": None}

        node = Node()
        odd = files.clean_attrs([node])
        self.assertEqual(node.attrs, {"dtype": "torch.float32", "dims": [1, 2], "min": "-inf", "p": 0.5,
                                      "keepdim": True, "x": None})
        self.assertEqual(odd, ["n.min"])
        json.dumps(node.attrs, allow_nan=False)

    def test_meta_writers(self):
        m = files.lm_meta(config={"vocab_size": 8, "odd": object}, prefill_len=4, cache_len=16, tokens=(1, 2),
                          dtype="torch.bfloat16", weights="random", last_only=False)
        self.assertEqual((m["kind"], m["greedy_tokens"], m["prefill_logits_saved"]), ("causal_lm", [1, 2], "all positions"))
        self.assertIsInstance(m["config"]["odd"], str)
        v = files.vision_meta(top5=[3, 1, 4, 1, 5], weights="random (seed 0)", input_rule="randn")
        with tempfile.TemporaryDirectory() as d:
            files.write_json(os.path.join(d, "sub", "meta.json"), v)
            self.assertEqual(load_json(d, "sub", "meta.json")["top5"], [3, 1, 4, 1, 5])

    def test_copy_text_files(self):
        with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as out:
            for name in ("tokenizer.json", "generation_config.json", "model.safetensors"):
                with open(os.path.join(src, name), "w") as f:
                    f.write(name)
            self.assertEqual(files.copy_text_files(src, os.path.join(out, "o")), ["tokenizer.json", "generation_config.json"])
            self.assertEqual(sorted(os.listdir(os.path.join(out, "o"))), ["generation_config.json", "tokenizer.json"])
            self.assertEqual(files.copy_text_files(out, os.path.join(out, "none")), [])


@unittest.skipUnless(HAVE_TORCH, NEED_TORCH)
class ExportModuleTest(unittest.TestCase):
    def test_small_module(self):
        import torch
        from safetensors.torch import load_file

        from npusim_export import export_module

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
                self.bn = torch.nn.BatchNorm2d(8)
                self.fc = torch.nn.Linear(8, 10)
                self.register_buffer("scale", torch.full((10,), 2.0), persistent=False)

            def forward(self, x):
                h = torch.relu(self.bn(self.conv(x))).mean((2, 3))
                return self.fc(h) * self.scale

        torch.manual_seed(0)
        net = Net().eval()
        x = torch.randn(1, 3, 8, 8)
        with tempfile.TemporaryDirectory() as d:
            export_module(net, (x,), d, kind="vision", name="net")
            ir = load_json(d, "ir.json")
            w = load_file(os.path.join(d, "weights.safetensors"))
            self.assertEqual(set(w), {t["name"] for t in ir["weights"]})
            self.assertIn("scale", w)  # non-persistent buffers too
            self.assertTrue(torch.equal(w["fc.weight"], net.fc.weight))
            io_ = load_file(os.path.join(d, "io.safetensors"))
            self.assertTrue(torch.equal(io_[ir["graph_inputs"][0]["name"]], x))
            with torch.no_grad():
                self.assertTrue(torch.allclose(io_[ir["graph_outputs"][0]["name"]], net(x)))
            meta = load_json(d, "meta.json")
            self.assertEqual(meta["kind"], "vision")
            self.assertEqual(len(meta["top5"]), 5)

    def test_tied_weights(self):
        import torch
        from safetensors.torch import load_file

        from npusim_export import export_module

        class Tied(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed_tokens = torch.nn.Embedding(16, 4)
                self.lm_head = torch.nn.Linear(4, 16, bias=False)
                self.lm_head.weight = self.embed_tokens.weight

            def forward(self, ids):
                return self.lm_head(self.embed_tokens(ids))

        with tempfile.TemporaryDirectory() as d:
            export_module(Tied().eval(), (torch.tensor([[1, 2, 3]]),), d)
            w = load_file(os.path.join(d, "weights.safetensors"))
            self.assertIn("embed_tokens.weight", w)


    def test_constant_made_in_init(self):
        import torch

        from npusim_export import export_module

        class Masked(torch.nn.Module):  # a plain tensor attribute: torch.export lifts it as a constant
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(4, 4)
                self.mask = torch.tensor([1.0, 0.0, 1.0, 0.0])

            def forward(self, x):
                return self.linear(x) * self.mask

        with tempfile.TemporaryDirectory() as d:
            export_module(Masked().eval(), (torch.randn(2, 4),), d)
            ir = load_json(d, "ir.json")
            self.assertEqual(list(ir["constants"].values())[0]["data"], [1.0, 0.0, 1.0, 0.0])


@unittest.skipUnless(HAVE_TORCH and have("torchvision"), NEED_TORCH + " and torchvision")
class TorchvisionTest(unittest.TestCase):
    def test_unknown_name(self):
        from npusim_export.core import ExportError
        from npusim_export.vision import export_torchvision
        with self.assertRaisesRegex(ExportError, "did you mean"):
            export_torchvision("resnet51", "/nonexistent")

    def test_mobilenet_v3_small(self):
        from npusim_export import export_torchvision
        with tempfile.TemporaryDirectory() as d:
            export_torchvision("mobilenet_v3_small", d, weights="random", input_shape=(1, 3, 96, 96), device="cpu")
            meta = load_json(d, "meta.json")
            self.assertEqual((meta["kind"], len(meta["top5"])), ("vision", 5))
            self.assertTrue(meta["weights"].startswith("random"))


@unittest.skipUnless(HAVE_TORCH and have("transformers"), NEED_TORCH + " and transformers")
class CausalLmTest(unittest.TestCase):
    def test_qwen2_tiny(self):
        from safetensors.torch import load_file

        from npusim_export import export_hf_causal_lm
        d = tempfile.mkdtemp()
        try:
            export_hf_causal_lm("qwen2-tiny", d, prefill_len=8, cache_len=24, decode_steps=4, device="cpu",
                                config_overrides={"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128})
            kv = load_json(d, "decode", "kv_mapping.json")
            self.assertEqual((kv["num_layers"], kv["prefill_seq_len"], kv["max_cache_len"]), (2, 8, 24))
            dec_io = load_file(os.path.join(d, "decode", "io.safetensors"))
            self.assertEqual(tuple(dec_io["decode_logits"].shape), (4, 256))
            self.assertEqual(dec_io["decode_tokens"].tolist(), load_json(d, "prefill", "meta.json")["greedy_tokens"])
            self.assertTrue(os.path.isfile(os.path.join(d, "prefill", "weights.safetensors")))
            self.assertFalse(os.path.exists(os.path.join(d, "decode", "weights.safetensors")))
        finally:
            shutil.rmtree(d)

    # make_fixtures.py's qwen_cfg for qwen2_tiny: the bundled fixture's synth.json was made from it
    TINY = {"vocab_size": 1024, "hidden_size": 128, "intermediate_size": 352, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32768,
            "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "use_sliding_window": False}

    def test_synth_weights_match_the_fixture_rule(self):
        from npusim_export import export_hf_causal_lm, synth
        # the rule itself, against the pure-Python splitmix64 of files.py
        h = files.fnv1a64("layer.weight")
        want = [(files.splitmix64(h + i) >> 40) * 2.0 ** -23 - 1.0 for i in range(7)]
        self.assertEqual(synth.unit("layer.weight", 7).tolist(), want)
        fixture = load_json(MODELS, "qwen2_tiny_prefill", "synth.json")
        d = tempfile.mkdtemp()
        try:
            export_hf_causal_lm("qwen2-tiny", os.path.join(d, "ref"), prefill_len=16, cache_len=64, decode_steps=8,
                                device="cpu", weights="synth", config_overrides=self.TINY, name="qwen2_tiny")
            export_hf_causal_lm("qwen2-tiny", os.path.join(d, "meta"), prefill_len=16, cache_len=64, device="cpu",
                                weights="synth", config_overrides=self.TINY, name="qwen2_tiny", reference=False)
            for part in ("ref", "meta"):
                man = load_json(d, part, "prefill", "synth.json")
                self.assertEqual(man["tensors"], fixture["tensors"], part)
                self.assertEqual(man["aliases"], fixture["aliases"], part)
                self.assertEqual(man["literals"].keys(), fixture["literals"].keys(), part)
                for k, lit in man["literals"].items():  # inv_freq rebuilt on the CPU; the fixture's came from CUDA
                    want = fixture["literals"][k]["values"]
                    self.assertEqual(lit["shape"], fixture["literals"][k]["shape"])
                    worst = max(abs(a - b) / abs(b) for a, b in zip(lit["values"], want))
                    self.assertLess(worst, 1e-5, f"{part} {k}")
                self.assertFalse(os.path.exists(os.path.join(d, part, "prefill", "weights.safetensors")))
                self.assertEqual(load_json(d, part, "decode", "synth.json"), man)
            # the reference from the synthetic weights is the fixture's: same greedy tokens
            self.assertEqual(load_json(d, "ref", "prefill", "meta.json")["greedy_tokens"],
                             load_json(MODELS, "qwen2_tiny_prefill", "meta.json")["greedy_tokens"])
            meta = load_json(d, "meta", "prefill", "meta.json")
            self.assertIsNone(meta["greedy_tokens"])
            self.assertFalse(os.path.exists(os.path.join(d, "meta", "decode", "io.safetensors")))
            (dtype, shape, raw), = read_safetensors(os.path.join(d, "meta", "prefill", "io.safetensors")).values()
            self.assertEqual((dtype, shape), ("I64", [1, 16]))
            self.assertEqual(list(struct.unpack("<16q", raw)), files.prompt_ids("qwen2_tiny", 16, 1024))
        finally:
            shutil.rmtree(d)

    def test_checkpoint_dir_and_config(self):
        import torch
        import transformers
        from safetensors.torch import load_file

        from npusim_export import export_hf_causal_lm
        from npusim_export.llm import make_config
        d = tempfile.mkdtemp()
        try:
            cfg = make_config("llama-tiny", {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 96,
                                             "num_hidden_layers": 1})
            model = transformers.AutoModelForCausalLM.from_config(cfg)
            model.save_pretrained(os.path.join(d, "ckpt"))
            export_hf_causal_lm(os.path.join(d, "ckpt"), os.path.join(d, "a"), prefill_len=4, cache_len=8,
                                decode_steps=2, device="cpu", dtype="f32", prefill_logits="last")
            w = load_file(os.path.join(d, "a", "prefill", "weights.safetensors"))
            self.assertTrue(torch.equal(w["model.model.embed_tokens.weight"], model.model.embed_tokens.weight))
            meta = load_json(d, "a", "prefill", "meta.json")
            self.assertTrue(meta["weights"].startswith("checkpoint"))
            self.assertEqual(meta["prefill_logits_saved"], "last position only")
            export_hf_causal_lm(os.path.join(d, "ckpt", "config.json"), os.path.join(d, "b"), prefill_len=4,
                                cache_len=8, decode_steps=2, device="cpu", dtype="f32")
            self.assertTrue(load_json(d, "b", "prefill", "meta.json")["weights"].startswith("random"))
            export_hf_causal_lm(model, os.path.join(d, "c"), prefill_len=4, cache_len=8, decode_steps=2, device="cpu")
            self.assertEqual(load_json(d, "c", "prefill", "meta.json")["weights"], "given model")
            self.assertEqual(model.model.embed_tokens.weight.dtype, torch.float32)  # the caller's model is untouched
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
