"""Exporting any nn.Module: IR by torch_ir on the meta device, real weights under the IR's names,
PyTorch's outputs for the sample inputs, and meta.json."""

import copy
import os
import time

import torch

from . import files

# npusim's tied-weight rules (weights/binding.hpp, BindOptions::ties): a missing key ending in the
# first name takes the value of the same prefix + the second. A tied copy these rules restore is
# not written twice.
NPUSIM_TIES = (("lm_head.weight", "model.embed_tokens.weight"), ("lm_head.weight", "embed_tokens.weight"),
               ("lm_head.weight", "transformer.wte.weight"))

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


class ExportError(RuntimeError):
    """A model that cannot be exported, with the reason."""


def log(*parts) -> None:
    print("[npusim-export]", *parts, flush=True)


def require_torch_ir():
    """The torch_ir module, or an ExportError saying how to get it."""
    try:
        import torch_ir
    except ImportError as e:
        raise ExportError("torch_ir (the pytorch-ir package) is not importable: install it with "
                          "`pip install pytorch-ir`, or put a checkout of its torch_ir/ on PYTHONPATH "
                          f"(e.g. PYTHONPATH=.devdeps/pyir). ({e})") from e
    return torch_ir


def torch_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise ExportError(f"dtype '{name}' is not one of {', '.join(DTYPES)}")
    return DTYPES[name]


def strict_fp32() -> None:
    """References in true float32: no TF32 matmuls or convolutions."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def pick_device(device=None) -> str:
    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _to_meta(x):
    return x.to("meta") if isinstance(x, torch.Tensor) else x


def extract(module, inputs, name, *, strict=True):
    """torch_ir IR of module for inputs: torch_ir.export_model + convert_exported_program, the steps of
    torch_ir.extract_ir. Constants torch.export lifts (non-persistent buffers such as HF's rotary
    inv_freq, tensors made in forward()) keep their values in the IR only when they have some: on
    the meta device they are left out, as newer torch_ir releases do with a warning (older ones
    raise), and collect_weights finds them in the real module."""
    torch_ir = require_torch_ir()
    try:
        exported = torch_ir.export_model(module, tuple(inputs), strict=strict)
        ir = torch_ir.convert_exported_program(exported, model_name=name, strict=False)
    except Exception as e:
        raise ExportError(f"torch_ir could not extract {name}: {type(e).__name__}: {e}") from e
    consts = getattr(exported, "constants", None) or {}
    ir.constants = {k: v for k, v in consts.items() if isinstance(v, torch.Tensor) and v.device.type != "meta"}
    return ir


def _named_tensors(module) -> dict:
    out = {}
    for k, v in module.named_parameters(remove_duplicate=False):
        out[k] = v
    for k, v in module.named_buffers(remove_duplicate=False):
        out[k] = v
    return out


def _attr_tensor(module, dotted):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if isinstance(obj, torch.Tensor) else None


def _storage_key(t):
    return (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))


def collect_weights(ir, module):
    """{IR weight name: CPU tensor in the IR's dtype} from the real module, plus notes. Parameters,
    buffers (persistent or not) and tensor attributes are looked up by the IR's state_dict-style
    names; a tied copy npusim restores by its tie rules is left out, other shared tensors are
    written once per name."""
    named = _named_tensors(module)
    weights, notes, missing, seen = {}, [], [], {}
    for w in ir.weights:
        t = named.get(w.name)
        if t is None:
            t = _attr_tensor(module, w.name)
        if t is None:
            if w.name in getattr(ir, "constants", {}):
                continue  # the IR carries its value
            missing.append(w.name)
            continue
        if tuple(t.shape) != tuple(w.shape):
            raise ExportError(f"weight {w.name}: module has shape {tuple(t.shape)}, IR says {tuple(w.shape)}")
        key = _storage_key(t)
        first = seen.get(key)
        if first is not None:
            if any(w.name.endswith(a) and w.name[:-len(a)] + b == first for a, b in NPUSIM_TIES):
                notes.append(f"tied: {w.name} = {first} (npusim restores it)")
                continue
            notes.append(f"shared: {w.name} = {first} (written twice)")
        else:
            seen[key] = w.name
        want = getattr(torch, w.dtype, None)
        t = t.detach()
        if isinstance(want, torch.dtype) and t.dtype != want:
            notes.append(f"cast: {w.name} {str(t.dtype).replace('torch.', '')} -> {w.dtype}")
            t = t.to(want)
        weights[w.name] = t.to("cpu", copy=True).contiguous()
    if missing:
        raise ExportError(f"{len(missing)} IR weight(s) not found in the module: {', '.join(missing[:8])}"
                          + (" ..." if len(missing) > 8 else ""))
    return weights, notes


def flat_tensors(value):
    """The tensors of a (nested) model output in torch.export's flattening order."""
    from torch.utils._pytree import tree_leaves
    return [v for v in tree_leaves(value) if isinstance(v, torch.Tensor)]


def io_tensors(ir, inputs, outputs) -> dict:
    """io.safetensors contents: graph inputs and outputs by IR tensor name."""
    ins = [x for x in inputs if isinstance(x, torch.Tensor)]
    outs = flat_tensors(outputs)
    if len(ins) != len(ir.graph_inputs):
        raise ExportError(f"{len(ins)} tensor inputs but the IR has {len(ir.graph_inputs)} graph inputs")
    if len(outs) != len(ir.graph_outputs):
        raise ExportError(f"the module returned {len(outs)} tensors but the IR has {len(ir.graph_outputs)} graph outputs")
    io = {}
    for spec, t in list(zip(ir.graph_inputs, ins)) + list(zip(ir.graph_outputs, outs)):
        io[spec.name] = t
    return io


def save_case(out_dir, ir, *, io, meta, weights=None):
    """Writes ir.json, weights.safetensors (when given), io.safetensors (when io is not None) and
    meta.json into out_dir."""
    from safetensors.torch import save_file
    os.makedirs(out_dir, exist_ok=True)
    odd = files.clean_attrs(ir.nodes)
    if odd:
        log(f"warning: non-finite attribute values written as strings: {', '.join(odd[:6])}")
    ir.save(os.path.join(out_dir, "ir.json"))
    if weights:
        save_file(weights, os.path.join(out_dir, "weights.safetensors"))
    if io is not None:
        save_file({k: v.detach().to("cpu").contiguous() for k, v in io.items()}, os.path.join(out_dir, "io.safetensors"))
    meta = dict(meta)
    meta["op_histogram"] = files.op_histogram(n.op_type for n in ir.nodes)
    meta["torch_version"] = torch.__version__
    meta["exporter"] = "npusim-export"
    files.write_json(os.path.join(out_dir, "meta.json"), meta)
    nbytes = sum(t.numel() * t.element_size() for t in (weights or {}).values())
    log(f"wrote {out_dir}: {len(ir.nodes)} nodes, {len(weights or {})} weight tensors ({nbytes / 2**20:.1f} MiB)")


def _float_copy(module):
    m = copy.deepcopy(module)
    return m.float()


def _float_inputs(inputs):
    return tuple(x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs)


def export_module(module, example_inputs, out_dir, *, kind=None, name=None, meta=None, meta_module=None,
                  reference_fp32=True):
    """Exports any nn.Module as an npusim case folder.

    module: the real module (its weights are written); example_inputs: a tuple of sample inputs on
    the module's device (tensors are saved to io.safetensors under the IR's input names);
    kind: "vision" for a classifier (meta.json gets its top-5; npusim checks top-5), or any label;
    meta_module: a meta-device twin to extract from (default: a deep copy moved to the meta device);
    reference_fp32: for f16/bf16 modules, compute the expected outputs in float32 from the rounded
    weights (the fixtures' convention) instead of in the module's dtype.
    Returns {"ir", "outputs", "dir"}.
    """
    t0 = time.time()
    if not isinstance(example_inputs, tuple):
        example_inputs = tuple(example_inputs) if isinstance(example_inputs, list) else (example_inputs,)
    name = name or type(module).__name__
    module = module.eval()
    strict_fp32()
    if meta_module is None:
        meta_module = copy.deepcopy(module).to("meta")
    meta_module = meta_module.eval()
    log(f"{name}: extracting the IR")
    try:
        ir = extract(meta_module, [_to_meta(x) for x in example_inputs], name)
        named = _named_tensors(module)
        lost = [w.name for w in ir.weights
                if w.name not in named and _attr_tensor(module, w.name) is None and w.name not in ir.constants]
        if lost:
            raise ExportError(f"constants without values on the meta device: {', '.join(lost[:6])}")
    except ExportError as e:
        # e.g. tensors made in forward(): extract from a CPU copy, whose constants have values
        log(f"{name}: {str(e).splitlines()[0][:240]}; extracting from a CPU copy instead")
        ir = extract(copy.deepcopy(module).to("cpu"),
                     [x.to("cpu") if isinstance(x, torch.Tensor) else x for x in example_inputs], name, strict=False)
    log(f"{name}: IR has {len(ir.nodes)} nodes ({time.time() - t0:.1f} s); collecting weights")
    weights, notes = collect_weights(ir, module)
    for n in notes:
        log("  " + n)
    half = any(p.is_floating_point() and p.dtype in (torch.float16, torch.bfloat16) for p in module.parameters())
    fp32_ref = half and reference_fp32
    log(f"{name}: running PyTorch for the expected outputs" + (" (float32 from the rounded weights)" if fp32_ref else ""))
    with torch.no_grad():
        if fp32_ref:
            outputs = _float_copy(module)(*_float_inputs(example_inputs))
        else:
            outputs = module(*example_inputs)
    outs = flat_tensors(outputs)
    info = dict(meta or {})
    info.setdefault("kind", kind or "module")
    if kind == "vision" and outs and outs[0].dim() == 2 and outs[0].shape[1] >= 5:
        info["top5"] = torch.topk(outs[0][0].float(), 5).indices.tolist()
    save_case(out_dir, ir, io=io_tensors(ir, example_inputs, outputs), meta=info, weights=weights)
    log(f"{name}: done in {time.time() - t0:.1f} s")
    return {"ir": ir, "outputs": outs, "dir": out_dir}
