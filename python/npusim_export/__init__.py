"""npusim_export: PyTorch models as npusim case folders (ir.json by torch_ir, weights.safetensors,
io.safetensors with PyTorch's outputs, meta.json; kv_mapping.json for LLM decode graphs).

    from npusim_export import export_module, export_torchvision, export_hf_causal_lm

Importing this package needs no torch; the export functions import it when called.
"""

__version__ = "0.1.0"

__all__ = ["export_module", "export_torchvision", "export_hf_causal_lm", "__version__"]


def export_module(module, example_inputs, out_dir, **kwargs):
    """Any nn.Module -> out_dir (see npusim_export.core.export_module)."""
    from .core import export_module as f
    return f(module, example_inputs, out_dir, **kwargs)


def export_torchvision(name, out_dir, **kwargs):
    """A torchvision classifier by name -> out_dir (see npusim_export.vision.export_torchvision)."""
    from .vision import export_torchvision as f
    return f(name, out_dir, **kwargs)


def export_hf_causal_lm(source, out_dir, **kwargs):
    """A Hugging Face causal LM -> out_dir/prefill, out_dir/decode (see npusim_export.llm.export_hf_causal_lm)."""
    from .llm import export_hf_causal_lm as f
    return f(source, out_dir, **kwargs)
