#!/usr/bin/env python3
"""Writes tests/data/moe/tiny_block: a mixture-of-experts block as IR JSON, built by hand in the
torch_ir format (no torch needed), with npusim-synth-v1 weights and its expected output computed
here in plain Python (float64 over the float32 weights and inputs), independently of npusim.

The block is transformers' `batched_mm` experts after a Mixtral router (docs/moe.md): 5 tokens,
hidden 16, 4 experts of intermediate 8, top-2 renormalised. The two gathers are written with
aten.index_select.default where a real export has aten.index.Tensor (x[tok], W[ids]).

    python3 tools/op_fixtures/make_moe_ir.py tests/data/moe/tiny_block
"""

import json
import math
import os
import struct
import sys

T, H, E, I, K = 5, 16, 4, 8, 2
M64 = (1 << 64) - 1


def fnv1a64(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) & M64
    return h


def splitmix64(s):
    s = (s + 0x9e3779b97f4a7c15) & M64
    z = s
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def synth(key, n, scale, offset=0.0):
    h = fnv1a64(key)
    return [f32(offset + f32(scale * f32(float(splitmix64((h + i) & M64) >> 40) * 2.0 ** -23 - 1.0))) for i in range(n)]


WEIGHTS = {  # key -> (placeholder, shape, scale)
    "gate.weight": ("p_gate_weight", [E, H], 0.5),
    "experts.gate_up_proj": ("p_experts_gate_up_proj", [E, 2 * I, H], 0.35),
    "experts.down_proj": ("p_experts_down_proj", [E, H, I], 0.35),
}


def spec(name, shape, dtype="float32", producer=None, idx=0):
    d = {"name": name, "shape": shape, "dtype": dtype}
    if producer is not None:
        d.update(producer_node=producer, producer_output_idx=idx)
    return d


class Builder:
    def __init__(self):
        self.nodes, self.shapes = [], {}

    def ref(self, t):
        """t: a graph input / weight placeholder name, or (node, output index)."""
        if isinstance(t, tuple):
            node, k = t
            out = node["outputs"][k]
            return spec(out["name"], out["shape"], out["dtype"], node["name"], k)
        if t in self.shapes:  # graph input
            shape, dtype = self.shapes[t]
            return spec(t, shape, dtype, t, 0)
        for key, (ph, shape, _) in WEIGHTS.items():
            if ph == t:
                return spec(ph, shape)
        raise KeyError(t)

    def node(self, name, op, inputs, outputs, attrs=None):
        n = {"name": name, "op_type": op, "inputs": [self.ref(t) for t in inputs],
             "outputs": [{"name": o, "shape": s, "dtype": d} for o, s, d in outputs], "attrs": attrs or {}}
        self.nodes.append(n)
        return n

    def one(self, name, op, inputs, shape, attrs=None, dtype="float32"):
        return (self.node(name, op, inputs, [(name, shape, dtype)], attrs), 0)


def build_ir():
    S = T * K
    b = Builder()
    b.shapes["xs_0"] = ([1, T, H], "float32")
    x = b.one("view", "aten.view.default", ["xs_0"], [T, H], {"size": [-1, H]})
    logits = b.one("linear", "aten.linear.default", [x, "p_gate_weight"], [T, E])
    probs = b.one("softmax", "aten.softmax.int", [logits], [T, E], {"dim": -1, "dtype": "torch.float32"})
    tk = b.node("topk", "aten.topk.default", [probs], [("topk_0", [T, K], "float32"), ("topk_1", [T, K], "int64")], {"k": K})
    vals = b.one("getitem", "<built-in function getitem>", [(tk, 0), (tk, 1)], [T, K], {"index": 0})
    idx = b.one("getitem_1", "<built-in function getitem>", [(tk, 0), (tk, 1)], [T, K], {"index": 1}, "int64")
    den = b.one("sum", "aten.sum.dim_IntList", [vals], [T, 1], {"dim": [-1], "keepdim": True})
    w = b.one("div", "aten.div.Tensor", [vals, den], [T, K])
    zeros = b.one("zeros_like", "aten.zeros_like.default", [x], [T, H], {"pin_memory": False})
    ids = b.one("reshape", "aten.reshape.default", [idx], [S], {"shape": [-1]}, "int64")
    ar = b.one("arange", "aten.arange.default", [], [T], {"end": T, "device": "cpu", "pin_memory": False}, "int64")
    ar = b.one("unsqueeze", "aten.unsqueeze.default", [ar], [T, 1], {"dim": 1}, "int64")
    ar = b.one("expand", "aten.expand.default", [ar], [T, K], {"size": [-1, K]}, "int64")
    tok = b.one("reshape_1", "aten.reshape.default", [ar], [S], {"shape": [-1]}, "int64")
    sw = b.one("reshape_2", "aten.reshape.default", [w], [S], {"shape": [-1]})
    xs = b.one("index_select", "aten.index_select.default", [x, tok], [S, H], {"dim": 0})
    wgu = b.one("index_select_1", "aten.index_select.default", ["p_experts_gate_up_proj", ids], [S, 2 * I, H], {"dim": 0})
    col = b.one("unsqueeze_1", "aten.unsqueeze.default", [xs], [S, H, 1], {"dim": -1})
    gu = b.one("bmm", "aten.bmm.default", [wgu, col], [S, 2 * I, 1])
    gu = b.one("squeeze", "aten.squeeze.dim", [gu], [S, 2 * I], {"dim": -1})
    ch = b.node("chunk", "aten.chunk.default", [gu], [("chunk_0", [S, I], "float32"), ("chunk_1", [S, I], "float32")], {"chunks": 2, "dim": -1})
    g = b.one("getitem_2", "<built-in function getitem>", [(ch, 0), (ch, 1)], [S, I], {"index": 0})
    u = b.one("getitem_3", "<built-in function getitem>", [(ch, 0), (ch, 1)], [S, I], {"index": 1})
    h = b.one("mul", "aten.mul.Tensor", [b.one("silu", "aten.silu.default", [g], [S, I]), u], [S, I])
    wd = b.one("index_select_2", "aten.index_select.default", ["p_experts_down_proj", ids], [S, H, I], {"dim": 0})
    col = b.one("unsqueeze_2", "aten.unsqueeze.default", [h], [S, I, 1], {"dim": -1})
    o = b.one("squeeze_1", "aten.squeeze.dim", [b.one("bmm_1", "aten.bmm.default", [wd, col], [S, H, 1])], [S, H], {"dim": -1})
    o = b.one("mul_1", "aten.mul.Tensor", [o, b.one("unsqueeze_3", "aten.unsqueeze.default", [sw], [S, 1], {"dim": -1})], [S, H])
    y = b.one("index_add", "aten.index_add.default", [zeros, tok, o], [T, H], {"dim": 0})
    y = b.one("view_1", "aten.view.default", [y], [1, T, H], {"size": [1, T, H]})
    return {
        "model_name": "moe_tiny_block",
        "pytorch_version": "none (written by tools/op_fixtures/make_moe_ir.py)",
        "graph_inputs": [{"name": "xs_0", "shape": [1, T, H], "dtype": "float32"}],
        "graph_outputs": [{"name": "view_1", "shape": [1, T, H], "dtype": "float32"}],
        "weights": [{"name": k, "shape": s, "dtype": "float32"} for k, (_, s, _) in WEIGHTS.items()],
        "weight_name_mapping": {ph: k for k, (ph, _, _) in WEIGHTS.items()},
        "nodes": b.nodes,
    }


def expected(x, wts):
    """The block in float64 over the float32 values: route, then each token's K experts."""
    gate, gu, dn = wts["gate.weight"], wts["experts.gate_up_proj"], wts["experts.down_proj"]
    y = [0.0] * (T * H)
    for t in range(T):
        xt = x[t * H:(t + 1) * H]
        logits = [sum(gate[e * H + c] * xt[c] for c in range(H)) for e in range(E)]
        m = max(logits)
        p = [math.exp(v - m) for v in logits]
        p = [v / sum(p) for v in p]
        top = sorted(range(E), key=lambda e: (-p[e], e))[:K]
        if abs(p[top[-1]] - max(p[e] for e in range(E) if e not in top)) < 1e-3:
            raise SystemExit("routing too close to a tie: choose other values")
        norm = sum(p[e] for e in top)
        for e in top:
            base = e * 2 * I * H
            hv = []
            for r in range(I):
                g = sum(gu[base + r * H + c] * xt[c] for c in range(H))
                u = sum(gu[base + (I + r) * H + c] * xt[c] for c in range(H))
                hv.append(g / (1 + math.exp(-g)) * u)
            for r in range(H):
                o = sum(dn[(e * H + r) * I + c] * hv[c] for c in range(I))
                y[t * H + r] += p[e] / norm * o
    return [f32(v) for v in y]


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, (shape, values) in sorted(tensors.items()):
        data = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/moe/tiny_block"
    os.makedirs(out, exist_ok=True)
    ir = build_ir()
    wts = {k: synth(k, math.prod(s), sc) for k, (_, s, sc) in WEIGHTS.items()}
    x = synth("input:xs_0", T * H, 2.0)
    with open(os.path.join(out, "ir.json"), "w") as f:
        json.dump(ir, f, indent=1)
    with open(os.path.join(out, "synth.json"), "w") as f:
        json.dump({"rule": "npusim-synth-v1", "tensors": {k: {"offset": 0.0, "scale": sc, "shape": s, "dtype": "float32"}
                                                        for k, (_, s, sc) in WEIGHTS.items()}}, f, indent=1)
    write_safetensors(os.path.join(out, "io.safetensors"), {"xs_0": ([1, T, H], x), "view_1": ([1, T, H], expected(x, wts))})
    hist = {}
    for n in ir["nodes"]:
        hist[n["op_type"]] = hist.get(n["op_type"], 0) + 1
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"kind": "op", "op_histogram": hist, "written_by": "tools/op_fixtures/make_moe_ir.py"}, f, indent=1)


if __name__ == "__main__":
    main()
