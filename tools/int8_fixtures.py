#!/usr/bin/python3
"""Op fixtures of PyTorch's quantized ops (issue 36): int8 convolution, linear, add and max pool
computed by PyTorch's own quantized kernels (Debian's python3-torch 1.13, onednn engine), for
tests/e2e/test_int8.cpp, which holds every npusim target to them within one step of the code.

PyTorch's activations are quint8 (0..255): a code u with zero point z is the int8 code u - 128
with zero point z - 128 (the same real value), which is how they are stored here. Weights are
qint8, symmetric per output channel; biases float (PyTorch quantizes them inside its kernels).
Writes tests/data/int8/<case>.safetensors (tensors) and cases.json (parameters).

usage: /usr/bin/python3 tools/int8_fixtures.py OUT_DIR
"""
import json
import struct
import sys

import torch
import torch.nn.intrinsic.quantized as nniq
import torch.nn.quantized as nnq
import torch.nn.functional as F

torch.backends.quantized.engine = "onednn"
torch.manual_seed(36)
out_dir = sys.argv[1]
cases = []


def save(name, tensors, params):
    header, blobs, offset = {}, [], 0
    for k, t in tensors.items():
        t = t.contiguous()
        dt = {torch.int8: "I8", torch.float32: "F32"}[t.dtype]
        raw = t.numpy().tobytes()
        header[k] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(f"{out_dir}/{name}.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    cases.append(dict(name=name, **params))


def codes(q):  # quint8 -> int8 codes (zero point - 128), qint8 as is
    r = q.int_repr()
    return (r.to(torch.int16) - 128).to(torch.int8) if q.dtype == torch.quint8 else r


def qact(shape, scale, zp):
    x = torch.randn(shape) * 2
    return torch.quantize_per_tensor(x, scale, zp, torch.quint8)


def qweight(shape):
    w = torch.randn(shape) * 0.1
    amax = w.abs().flatten(1).max(1).values
    scales = (amax / 127.5).to(torch.float64)
    return torch.quantize_per_channel(w, scales, torch.zeros(shape[0], dtype=torch.int64), 0, torch.qint8), scales.float()


def conv_case(name, cin, cout, k, stride, pad, hw, relu, x_scale, x_zp, out_scale, out_zp):
    qx = qact((1, cin, hw, hw), x_scale, x_zp)
    qw, ws = qweight((cout, cin, k, k))
    bias = torch.randn(cout) * 0.5
    m = (nniq.ConvReLU2d if relu else nnq.Conv2d)(cin, cout, k, stride=stride, padding=pad)
    m.set_weight_bias(qw, bias)
    m.scale, m.zero_point = out_scale, out_zp
    y = m(qx)
    save(name, {"x": codes(qx), "w": codes(qw), "w_scale": ws, "bias": bias, "y": codes(y)},
         dict(op="conv", stride=stride, padding=pad, relu=relu, x_scale=x_scale, x_zero_point=x_zp - 128,
              out_scale=out_scale, out_zero_point=out_zp - 128))


def linear_case(name, m_rows, k, n, x_scale, x_zp, out_scale, out_zp):
    qx = qact((m_rows, k), x_scale, x_zp)
    qw, ws = qweight((n, k))
    bias = torch.randn(n) * 0.5
    m = nnq.Linear(k, n)
    m.set_weight_bias(qw, bias)
    m.scale, m.zero_point = out_scale, out_zp
    y = m(qx)
    save(name, {"x": codes(qx), "w": codes(qw), "w_scale": ws, "bias": bias, "y": codes(y)},
         dict(op="linear", relu=False, x_scale=x_scale, x_zero_point=x_zp - 128, out_scale=out_scale, out_zero_point=out_zp - 128))


def add_case(name, relu, a_scale, a_zp, b_scale, b_zp, out_scale, out_zp):
    qa, qb = qact((1, 8, 6, 6), a_scale, a_zp), qact((1, 8, 6, 6), b_scale, b_zp)
    y = (torch.ops.quantized.add_relu if relu else torch.ops.quantized.add)(qa, qb, out_scale, out_zp)
    save(name, {"a": codes(qa), "b": codes(qb), "y": codes(y)},
         dict(op="add", relu=relu, a_scale=a_scale, a_zero_point=a_zp - 128, b_scale=b_scale, b_zero_point=b_zp - 128,
              out_scale=out_scale, out_zero_point=out_zp - 128))


def pool_case(name):
    qx = qact((1, 4, 9, 9), 0.05, 100)
    y = F.max_pool2d(qx, 3, 2, 1)
    save(name, {"x": codes(qx), "y": codes(y)}, dict(op="max_pool", kernel=3, stride=2, padding=1))


conv_case("conv3x3_relu", 8, 16, 3, 1, 1, 9, True, 0.04, 120, 0.05, 0)
conv_case("conv1x1_s2", 16, 24, 1, 2, 0, 8, False, 0.03, 128, 0.08, 131)
conv_case("conv7x7_s2_stem", 3, 16, 7, 2, 3, 20, True, 0.02, 128, 0.1, 0)
linear_case("linear", 3, 40, 20, 0.05, 128, 0.1, 126)
add_case("add", False, 0.05, 128, 0.03, 110, 0.07, 128)
add_case("add_relu", True, 0.04, 120, 0.04, 135, 0.06, 0)
pool_case("max_pool")
with open(f"{out_dir}/cases.json", "w") as f:
    json.dump({"generator": "tools/int8_fixtures.py", "torch": torch.__version__, "engine": "onednn", "cases": cases}, f, indent=1)
print(f"{len(cases)} cases, torch {torch.__version__}")
