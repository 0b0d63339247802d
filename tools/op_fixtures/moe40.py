"""PyTorch op fixtures for the mixture-of-experts ops (issue 40, item 3).

`cases()` returns (name, module factory, [input factory(device)]) in the format of
op_cases_extra() in ../shared/fixtures/make_fixtures.py, whose make_op_cases() exports each case
with torch_ir and PyTorch's outputs. Run on the device machine, e.g.:

    import make_fixtures as mf, moe40
    mf.make_op_cases(OUT_DIR, "cuda", moe40.cases())

The experts blocks are written as transformers' `batched_mm` experts implementation
(transformers/integrations/moe.py), the static-shape form npusim's `moe` pattern fuses; the
`_select` variants spell the two gathers with index_select instead of indexing (aten.index.Tensor).
The transformers blocks (mixtral_moe_block, qwen2_moe_block) are the real modules with
`_experts_implementation = "batched_mm"`; a case that fails to build or export is logged and
skipped by make_op_cases.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Wrap(nn.Module):
    """As make_fixtures.Wrap (kept here so that this file imports nothing of it)."""

    def __init__(self, fn, **mods):
        super().__init__()
        self.fn = fn
        for k, v in mods.items():
            setattr(self, k, v)

    def forward(self, *xs):
        return self.fn(self, *xs)


class MoeBatchedMM(nn.Module):
    """Router (linear, softmax in float32, top-k, optional renormalisation) and SwiGLU experts stored
    as 3-D tensors gate_up_proj [E, 2I, H] and down_proj [E, H, I], computed as batched_mm does."""

    def __init__(self, hidden=32, inter=24, experts=4, top_k=2, norm_topk_prob=True, select=False):
        super().__init__()
        self.top_k, self.norm, self.select = top_k, norm_topk_prob, select
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.gate_up_proj = nn.Parameter(torch.randn(experts, 2 * inter, hidden) * 0.1)
        self.down_proj = nn.Parameter(torch.randn(experts, hidden, inter) * 0.1)

    def forward(self, x):
        b, t, h = x.shape
        x = x.view(-1, h)
        probs = F.softmax(self.gate(x), dim=-1, dtype=torch.float)
        w, idx = torch.topk(probs, self.top_k, dim=-1)
        if self.norm:
            w = w / w.sum(dim=-1, keepdim=True)
        w = w.to(x.dtype)
        out = torch.zeros_like(x)
        ids = idx.reshape(-1)
        tok = torch.arange(b * t, device=x.device).unsqueeze(1).expand(-1, self.top_k).reshape(-1)
        if self.select:
            xs, wgu, wd = x.index_select(0, tok), self.gate_up_proj.index_select(0, ids), self.down_proj.index_select(0, ids)
        else:
            xs, wgu, wd = x[tok], self.gate_up_proj[ids], self.down_proj[ids]
        gate, up = torch.bmm(wgu, xs.unsqueeze(-1)).squeeze(-1).chunk(2, dim=-1)
        o = torch.bmm(wd, (F.silu(gate) * up).unsqueeze(-1)).squeeze(-1)
        o = o * w.reshape(-1).unsqueeze(-1)
        out.index_add_(0, tok, o.to(out.dtype))
        return out.view(b, t, h)


def _hf_block(kind):
    import transformers
    if kind == "mixtral":
        cfg = transformers.MixtralConfig(hidden_size=32, intermediate_size=24, num_local_experts=4, num_experts_per_tok=2)
        from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock as Block
    else:
        cfg = transformers.Qwen2MoeConfig(hidden_size=32, moe_intermediate_size=24, shared_expert_intermediate_size=48, num_experts=4,
                                          num_experts_per_tok=2, norm_topk_prob=False)
        from transformers.models.qwen2_moe.modeling_qwen2_moe import Qwen2MoeSparseMoeBlock as Block
    cfg._experts_implementation = "batched_mm"
    block = Block(cfg)

    def fwd(s, x):
        y = s.block(x)
        return y[0] if isinstance(y, tuple) else y
    return Wrap(fwd, block=block)


def cases():
    r = lambda *s: (lambda dev: torch.randn(*s, device=dev))  # noqa: E731
    return [
        ("topk_last", lambda: Wrap(lambda s, a: tuple(torch.topk(a, 3, dim=-1))), [r(4, 10)]),
        ("topk_dim0_smallest", lambda: Wrap(lambda s, a: tuple(torch.topk(a, 2, dim=0, largest=False))), [r(5, 6)]),
        ("topk_softmax_router", lambda: Wrap(lambda s, a: tuple(torch.topk(torch.softmax(a, dim=-1), 2, dim=-1))), [r(7, 8)]),
        ("zeros_like_add", lambda: Wrap(lambda s, a: torch.zeros_like(a) + a * 2.0), [r(3, 9)]),
        ("index_add_rows", lambda: Wrap(lambda s, a, i, b: a.index_add(0, i, b)),
         [r(5, 7), lambda dev: torch.tensor([0, 3, 0, 4, 3, 1], device=dev), r(6, 7)]),
        ("index_add_dim1_alpha", lambda: Wrap(lambda s, a, i, b: a.index_add(1, i, b, alpha=0.5)),
         [r(2, 6, 3), lambda dev: torch.tensor([5, 0, 5], device=dev), r(2, 3, 3)]),
        ("moe_batched_mm", lambda: MoeBatchedMM(), [r(1, 5, 32)]),
        ("moe_batched_mm_decode", lambda: MoeBatchedMM(norm_topk_prob=False), [r(1, 1, 32)]),
        ("moe_batched_mm_select", lambda: MoeBatchedMM(select=True), [r(1, 5, 32)]),
        ("mixtral_moe_block", lambda: _hf_block("mixtral"), [r(1, 5, 32)]),
        ("qwen2_moe_block", lambda: _hf_block("qwen2_moe"), [r(1, 5, 32)]),
    ]
