"""Synthetic weights by the npusim-synth-v1 rule (the fixtures README; weights/synth.hpp): every
weight regenerated bit-exactly from its state_dict key, so a case needs a synth.json manifest
instead of a weights file. Element i of the tensor with key K is

    x_i   = float32(splitmix64(fnv1a64(K) + i) >> 40) * 2^-23 - 1        in [-1, 1)
    value = offset + scale * x_i   (float32, two roundings), then rounded to the tensor's dtype

with offset and scale by the tensor's role (role_scale: norm gains around 1, weights scaled by
their fan-in). A model too large to hold (a 72B shape) is described from its meta-device twin:
manifest() needs only shapes and dtypes; fill() writes the values into a real module for PyTorch's
reference.
"""

import math

import torch

from .core import ExportError
from .files import M64, SPLITMIX_C1 as C1, SPLITMIX_C2 as C2, SPLITMIX_GOLDEN as GOLDEN, fnv1a64

RULE = "npusim-synth-v1"


def _signed(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >= (1 << 63) else v


def _lsr(z, k):
    return (z >> k) & ((1 << (64 - k)) - 1)


def unit(key: str, n: int, device="cpu") -> torch.Tensor:
    """x_i in [-1, 1) for i in [0, n), as float32 (int64 arithmetic wraps like uint64)."""
    out = torch.empty(n, dtype=torch.float32, device=device)
    h = fnv1a64(key)
    chunk = 1 << 26
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        z = torch.arange(start, start + m, dtype=torch.int64, device=device) + _signed(h + GOLDEN)
        z = (z ^ _lsr(z, 30)) * _signed(C1)
        z = (z ^ _lsr(z, 27)) * _signed(C2)
        z = z ^ _lsr(z, 31)
        out[start:start + m] = _lsr(z, 40).to(torch.float32) * (2.0 ** -23) - 1.0
    return out


def role_scale(key: str, t: torch.Tensor):
    """(offset, scale) of a state_dict entry, as the fixtures' generator chooses them."""
    if not t.is_floating_point():
        return 0.0, 0.0
    if key.endswith("running_var"):
        return 1.0, 0.5
    if key.endswith("running_mean"):
        return 0.0, 0.2
    if t.dim() == 1:
        parts = key.split(".")
        last, prev = parts[-1], (parts[-2] if len(parts) > 1 else "")
        if last == "weight":  # norm gains
            return 1.0, 0.2
        if last == "bias" and ("bn" in prev or "norm" in prev or "downsample" in key or "ln" in prev):
            return 0.0, 0.1
        return 0.0, 0.05
    fan_in = math.prod(t.shape[1:]) if t.dim() > 1 else 1
    return 0.0, math.sqrt(3.0 / max(fan_in, 1))


def _dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def _literal_values(module, path: str, buffer: torch.Tensor, config):
    """Values of a non-persistent buffer (HF's rotary inv_freq) of a meta-device module: the
    buffer's owner rebuilt on the CPU from the config (it holds no parameters, so it is small)."""
    owner_path, _, attr = path.rpartition(".")
    owner = module.get_submodule(owner_path) if owner_path else module
    if any(True for _ in owner.parameters()):
        raise ExportError(f"buffer {path} has no values on the meta device and its module "
                          f"{type(owner).__name__} holds parameters: export with the reference instead")
    try:
        fresh = type(owner)(config=config, device="cpu")
    except TypeError:
        try:
            fresh = type(owner)(config)
        except Exception as e:  # noqa: BLE001 (any constructor failure means: cannot rebuild)
            raise ExportError(f"buffer {path}: cannot rebuild {type(owner).__name__} on the CPU to read its "
                              f"values ({type(e).__name__}: {e})") from e
    value = getattr(fresh, attr, None)
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != tuple(buffer.shape):
        raise ExportError(f"buffer {path}: the rebuilt {type(owner).__name__} has no tensor of shape "
                          f"{tuple(buffer.shape)}")
    # as the model holds it: model.to(bf16) rounds float buffers too, and PyTorch computes with that
    return value.to(buffer.dtype)


def manifest(module, config=None) -> dict:
    """The synth.json of a module (meta-device or real): offset, scale, shape and dtype per key; tied
    parameters (one Parameter under several keys) as aliases of the first key; non-persistent
    buffers as literal values (from the module when it has them, else rebuilt from config)."""
    out = {"rule": RULE, "tensors": {}, "aliases": {}, "literals": {}}
    first = {}
    sd = module.state_dict(keep_vars=True)
    for key, t in sd.items():
        if id(t) in first:
            out["aliases"][key] = first[id(t)]
            continue
        first[id(t)] = key
        off, sc = role_scale(key, t)
        out["tensors"][key] = {"offset": off, "scale": sc, "shape": list(t.shape), "dtype": _dtype_name(t)}
    for key, b in module.named_buffers():
        if key in sd:
            continue
        values = _literal_values(module, key, b, config) if b.device.type == "meta" else b
        out["literals"][key] = {"dtype": _dtype_name(b), "shape": list(b.shape),
                                "values": values.detach().float().cpu().flatten().tolist()}
    return out


def fill(module, man: dict) -> None:
    """Writes the manifest's values into a real module's parameters and persistent buffers (rounded
    to each tensor's dtype; integer tensors are zero), so PyTorch computes the reference from the
    same weights npusim regenerates."""
    sd = module.state_dict(keep_vars=True)
    with torch.no_grad():
        for key, spec in man["tensors"].items():
            t = sd[key]
            if not t.is_floating_point():
                if t.dtype != torch.bool:
                    t.data.zero_()
                continue
            x = unit(key, t.numel(), t.device).reshape(t.shape)
            t.data.copy_((spec["offset"] + spec["scale"] * x).to(t.dtype))
