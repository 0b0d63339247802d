"""torchvision classifiers."""

import difflib

import torch

from . import files
from .core import ExportError, export_module, log, pick_device, torch_dtype


def classification_models():
    import torchvision.models as tvm
    return tvm.list_models(module=tvm)


def calibrate_bn(model, x) -> int:
    """Sets every BatchNorm's running statistics to those of batch x, as training would have (random
    weights with identity statistics blow activations up or down layer after layer). Returns the
    number of BatchNorm layers."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: after one batch, exactly its statistics
    if bns:
        model.train()
        with torch.no_grad():
            model(x)
    model.eval()
    return len(bns)


def export_torchvision(name, out_dir, *, weights="default", dtype="f32", input_shape=(1, 3, 224, 224), seed=0,
                       device=None):
    """Exports torchvision classification model `name` (e.g. "resnet50") into out_dir.

    weights: "default" (the pretrained weights; needs them downloaded or cached, else falls back to
    random with a message) or "random" (torchvision's initialisation with torch.manual_seed(seed),
    then BatchNorm statistics calibrated on a random batch). The sample input is a seeded standard
    normal batch of input_shape. dtype: f32, bf16 or f16 (weights and input rounded; the expected
    logits are computed in float32). meta.json records which weights were used.
    """
    import torchvision.models as tvm
    known = classification_models()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=4)
        raise ExportError(f"'{name}' is not a torchvision classification model"
                          + (f" (did you mean {', '.join(close)}?)" if close else "")
                          + f"; {len(known)} are known, e.g. resnet50, mobilenet_v2, mobilenet_v3_small, vit_b_16")
    if weights not in ("default", "random"):
        raise ExportError(f"weights must be 'default' or 'random', not '{weights}'")
    device = pick_device(device)
    used = weights
    model = None
    if weights == "default":
        try:
            model = tvm.get_model(name, weights="DEFAULT")
            log(f"{name}: weights: pretrained (torchvision DEFAULT)")
        except Exception as e:
            log(f"{name}: pretrained weights unavailable ({type(e).__name__}: {str(e).splitlines()[0][:160]}); "
                "using random weights")
            used = "random"
    torch.manual_seed(seed)
    if model is None:
        model = tvm.get_model(name, weights=None)
        log(f"{name}: weights: random (torchvision init, seed {seed})")
    model = model.to(device).eval()
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(tuple(input_shape), generator=gen).to(device)
    if used == "random":
        calib = torch.randn((8,) + tuple(input_shape[1:]), generator=gen).to(device)
        n = calibrate_bn(model, torch.cat([x, calib]))
        if n:
            log(f"{name}: calibrated {n} BatchNorm layers on a random batch")
    dt = torch_dtype(dtype)
    model = model.to(dt)
    x = x.to(dt)
    meta = files.vision_meta(top5=[], weights="pretrained" if used == "default" else f"random (seed {seed})",
                             input_rule=f"torch.randn({tuple(input_shape)}) from torch.Generator seed {seed}")
    meta["dtype"] = dtype
    return export_module(model, (x,), out_dir, kind="vision", name=name, meta=meta)
