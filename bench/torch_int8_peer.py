#!/usr/bin/python3
"""PyTorch's own int8 ResNet on the CPU: the peer of `npusim quantize` + the CPU target (issue 36).

torchvision.models.quantization.resnet18/resnet50 with random weights (weights=None), eager-mode
post-training quantization on the chosen engine (Debian's python3-torch 1.13 has onednn and
qnnpack, not fbgemm): fuse_model, prepare with the engine's default qconfig, calibrate on
`--calib` random inputs, convert. Also the float model for the ratio. One JSON line.

usage: /usr/bin/python3 bench/torch_int8_peer.py MODEL THREADS [--engine onednn] [--iters 30]
"""
import argparse
import json
import statistics
import time

import torch
import torchvision

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("threads", type=int)
p.add_argument("--engine", default="onednn")
p.add_argument("--calib", type=int, default=8)
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--iters", type=int, default=30)
a = p.parse_args()

torch.set_num_threads(a.threads)
torch.manual_seed(0)
torch.backends.quantized.engine = a.engine


def timed(model, x):
    with torch.no_grad():
        for _ in range(a.warmup):
            model(x)
        ts = []
        for _ in range(a.iters):
            t0 = time.perf_counter()
            model(x)
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


x = torch.randn(1, 3, 224, 224)
fmodel = getattr(torchvision.models, a.model)(weights=None).eval()
f_med, f_min = timed(fmodel, x)

qmodel = getattr(torchvision.models.quantization, a.model)(weights=None, quantize=False).eval()
qmodel.fuse_model()
qmodel.qconfig = torch.ao.quantization.get_default_qconfig(a.engine)
torch.ao.quantization.prepare(qmodel, inplace=True)
with torch.no_grad():
    for _ in range(a.calib):
        qmodel(torch.randn(1, 3, 224, 224))
torch.ao.quantization.convert(qmodel, inplace=True)
q_med, q_min = timed(qmodel, x)
print(json.dumps({"model": a.model, "threads": torch.get_num_threads(), "engine": a.engine, "torch": torch.__version__,
                  "f32_median_ms": round(f_med, 2), "f32_min_ms": round(f_min, 2),
                  "int8_median_ms": round(q_med, 2), "int8_min_ms": round(q_min, 2), "iters": a.iters}))
