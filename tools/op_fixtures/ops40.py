"""PyTorch op fixtures for the model-zoo ops other than mixture-of-experts (issue 40, items 2 and 6).

`cases()` returns (name, module factory, [input factory(device)]) in the format of
op_cases_extra() in ../shared/fixtures/make_fixtures.py, whose make_op_cases() exports each case
with torch_ir and PyTorch's outputs. Run on the device machine, e.g.:

    import make_fixtures as mf, ops40
    mf.make_op_cases(OUT_DIR, "cuda", ops40.cases())

The fixtures are exported on the meta device, where tensor constants created inside forward (a
Python scalar written with `t[a:b] = 3`, `torch.tensor(...)`) lose their values, and where
make_fixtures zeroes integer buffers: so index tensors and the values written are graph inputs
here. The whole torchvision blocks (swin's shifted-window attention writes its mask from Python
ints) are left to the model-zoo sweep, which exports on a real device.
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


def rel_position_index(w):
    """Swin's relative_position_index for a w x w window: [w*w*w*w] indices into a (2w-1)^2 table."""
    coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += w - 1
    rel[:, :, 1] += w - 1
    rel[:, :, 0] *= 2 * w - 1
    return rel.sum(-1).flatten()


def swin_bias(s, table, index):
    """torchvision's _get_relative_position_bias: gather, [N, N, heads] -> [1, heads, N, N]."""
    n = int(index.numel() ** 0.5)
    return s.table[index].view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0) + table


def gemma_rmsnorm(s, x):
    """Gemma's RMSNorm: computed in float32, (1 + weight), cast back with type_as."""
    xf = x.float()
    out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (out * (1.0 + s.weight.float())).type_as(x)


def setitem_slices(s, x, v):
    """swin's mask construction with tensor values: new_zeros, writes through two slices each."""
    m = x.new_zeros((6, 6))
    m[0:3, 3:] = v[0]
    m[3:, :2] = v[1]
    m[-1:, -1:] = v[2]
    return m + x


def zero_bias(s, x):
    """swin v2: the qkv bias cloned, its key third zeroed in place, then the linear."""
    b = s.lin.bias.clone()
    n = b.numel() // 3
    b[n:2 * n].zero_()
    return F.linear(x, s.lin.weight, b)


def setitem_select(s, x, r):
    """A write through select (a row), read through the base afterwards."""
    y = x.clone()
    y[:, 1] = r
    return y * 2.0


def cases():
    r = lambda *s: (lambda dev: torch.randn(*s, device=dev))  # noqa: E731
    ints = lambda hi, *s: (lambda dev: torch.randint(0, hi, s, device=dev))  # noqa: E731
    e = lambda eq: Wrap(lambda s, *xs: torch.einsum(eq, *xs))  # noqa: E731
    return [
        # einsum: matrix product, batched, transposed output, sums, trace/diagonal, ellipsis, three operands
        ("einsum_mm", lambda: e("ij,jk->ik"), [r(5, 7), r(7, 3)]),
        ("einsum_bmm", lambda: e("bij,bjk->bik"), [r(2, 4, 6), r(2, 6, 3)]),
        ("einsum_tout", lambda: e("bij,bjk->bki"), [r(2, 4, 6), r(2, 6, 3)]),
        ("einsum_maxvit", lambda: Wrap(lambda s, q, k, v: torch.einsum(
            "B G H I J, B G H J D -> B G H I D",
            torch.einsum("B G H I D, B G H J D -> B G H I J", q, k).softmax(-1), v)),
         [r(1, 4, 2, 9, 8), r(1, 4, 2, 9, 8), r(1, 4, 2, 9, 8)]),
        ("einsum_sum", lambda: Wrap(lambda s, a: (torch.einsum("ijk->j", a), torch.einsum("ijk->", a))), [r(3, 4, 5)]),
        ("einsum_trace", lambda: Wrap(lambda s, a, b: (torch.einsum("ii", a), torch.einsum("ii->i", a),
                                                       torch.einsum("iij->j", b))), [r(4, 4), r(3, 3, 5)]),
        ("einsum_ellipsis", lambda: Wrap(lambda s, a, b: (torch.einsum("...ij,...jk->...ik", a, b),
                                                          torch.einsum("...ij,...jk", a, b).sum())),
         [r(2, 1, 3, 4), r(3, 4, 5)]),
        ("einsum_three", lambda: Wrap(lambda s, a, w, b: (torch.einsum("bn,anm,bm->ba", a, w, b),
                                                          torch.einsum("i,j", a[0], b[0]))),
         [r(2, 3), r(4, 3, 5), r(2, 5)]),
        # index.Tensor: swin's relative position bias gather, a None entry, separated and broadcast indices
        ("index_relpos", lambda: Wrap(swin_bias, table=nn.Parameter(torch.randn(25, 2))),
         [r(1, 2, 9, 9), lambda dev: rel_position_index(3).to(dev)]),
        ("index_none", lambda: Wrap(lambda s, x, i: x[:, i]), [r(3, 8), ints(8, 5)]),
        ("index_split", lambda: Wrap(lambda s, x, i, j: (x[i, :, j], x[:, i[:, None], j])),
         [r(4, 3, 5), ints(3, 2), ints(5, 2)]),
        # pad: swin's constant pad (NHWC, right/bottom), a value, and the other modes
        ("pad_const", lambda: Wrap(lambda s, x: (F.pad(x, (0, 0, 0, 2, 0, 1)), F.pad(x[0, 0], (1, 2), value=1.5))),
         [r(1, 5, 5, 4)]),
        ("pad_modes", lambda: Wrap(lambda s, x, y: (F.pad(x, (2, 1), mode="reflect"), F.pad(y, (1, 1, 2, 0), mode="replicate"),
                                                    F.pad(x, (2, 1), mode="circular"))),
         [r(1, 3, 8), r(1, 2, 4, 5)]),
        # roll: swin's cyclic shift and its inverse, and the flattened roll
        ("roll", lambda: Wrap(lambda s, x: (torch.roll(x, shifts=(-2, -2), dims=(1, 2)), torch.roll(x, 3))), [r(1, 6, 6, 4)]),
        # masked_fill: swin's mask to -100 / 0
        ("masked_fill", lambda: Wrap(lambda s, m: m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0) + m),
         [lambda dev: torch.randint(-1, 2, (4, 9), device=dev).float()]),
        # linalg_vector_norm: swin v2's F.normalize (norm, clamp_min, expand_as, div) and other orders
        ("vector_norm", lambda: Wrap(lambda s, x: (F.normalize(x, dim=-1), torch.linalg.vector_norm(x, ord=3, dim=(0, 2)),
                                                   torch.linalg.vector_norm(x, ord=1))), [r(2, 3, 16)]),
        # type_as: Gemma's RMSNorm in bf16
        ("type_as_bf16", lambda: Wrap(gemma_rmsnorm, weight=nn.Parameter(torch.zeros(32))).to(torch.bfloat16),
         [lambda dev: torch.randn(1, 5, 32, device=dev).bfloat16()]),
        # swapaxes, expand_as
        ("swapaxes", lambda: Wrap(lambda s, x: x.swapaxes(-2, -3).contiguous() * 2.0), [r(2, 3, 4, 5)]),
        ("expand_as", lambda: Wrap(lambda s, a, b: a.expand_as(b) + b), [r(3, 1), r(3, 5)]),
        # new_zeros / copy_ / zero_ as swin and swin v2 write them
        ("setitem_slices", lambda: Wrap(setitem_slices), [r(6, 6), r(3)]),
        ("zero_bias", lambda: Wrap(zero_bias, lin=nn.Linear(8, 12)), [r(2, 8)]),
        ("setitem_select", lambda: Wrap(setitem_select), [r(3, 4), r(3)]),
    ]
