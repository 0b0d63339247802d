// Definitions for npusim/target/cpu/kernels/misc.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/target/cpu/kernels/misc.hpp"

namespace npusim::inline NPUSIM_ABI::cpu {

NPUSIM_FUNC Fn bind_embedding(Ctx& c) {
  const ir::Node& n = c.node();
  const ir::TensorId w = n.inputs[0], idx = n.inputs[1], y = n.outputs[0];
  const std::int64_t V = c.shape(w)[0], D = c.shape(w)[1], count = c.numel(idx);
  const std::byte *pw = c.ptr(w), *pi = c.ptr(idx);
  std::byte* py = c.ptr(y);
  const DType dw = c.storage(w), di = c.storage(idx), dy = c.storage(y);
  return [=] {
    float* row = row_buffer(0, D);
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t r = read_index(pi, di, i);
      if (r < 0 || r >= V) index_error("embedding", r, V, false);
      if (dw == dy) {
        std::memcpy(py + static_cast<std::size_t>(i * D) * dtype_size(dy), pw + static_cast<std::size_t>(r * D) * dtype_size(dw), static_cast<std::size_t>(D) * dtype_size(dw));
      } else {
        load_row(dw, pw + static_cast<std::size_t>(r * D) * dtype_size(dw), row, D);
        store_row(dy, row, py + static_cast<std::size_t>(i * D) * dtype_size(dy), D);
      }
    }
  };
}

NPUSIM_FUNC Fn bind_index_copy(Ctx& c, const ops::IndexCopy::Attrs& a) {
  const ir::Node& n = c.node();
  const ir::TensorId self = n.inputs[0], idx = n.inputs[1], src = n.inputs[2], y = n.outputs[0];
  const Shape& s = c.shape(self);
  if (c.storage(self) != c.storage(y)) c.unsupported("index_copy between storage types");
  const std::size_t d = s.empty() ? 0 : static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= s[i];
  for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
  const std::int64_t len = s.empty() ? 1 : s[d], count = c.numel(idx), bytes = c.numel(self) * static_cast<std::int64_t>(dtype_size(c.storage(y)));
  const std::byte *ps = c.ptr(self), *pi = c.ptr(idx), *pr = c.ptr(src);
  std::byte* py = c.ptr(y);
  const DType di = c.storage(idx), dsrc = c.storage(src), dy = c.storage(y);
  const std::size_t es = dtype_size(dy);
  return [=] {
    if (py != ps) std::memcpy(py, ps, static_cast<std::size_t>(bytes));
    for (std::int64_t k = 0; k < count; ++k) {
      std::int64_t p = read_index(pi, di, k);
      if (p < -len || p >= len) index_error("index_copy", p, len);
      if (p < 0) p += len;
      for (std::int64_t o = 0; o < outer; ++o) {
        std::byte* dst = py + static_cast<std::size_t>((o * len + p) * inner) * es;
        const std::byte* from = pr + static_cast<std::size_t>((o * count + k) * inner) * dtype_size(dsrc);
        if (dsrc == dy) std::memcpy(dst, from, static_cast<std::size_t>(inner) * es);
        else {
          float* row = row_buffer(0, inner);
          load_row(dsrc, from, row, inner);
          store_row(dy, row, dst, inner);
        }
      }
    }
  };
}

NPUSIM_FUNC Fn bind_index_select(Ctx& c, const ops::IndexSelect::Attrs& a) {
  const ir::Node& n = c.node();
  const ir::TensorId x = n.inputs[0], idx = n.inputs[1], y = n.outputs[0];
  const Shape& s = c.shape(x);
  const std::size_t d = static_cast<std::size_t>(normalize_dim(a.dim, static_cast<std::int64_t>(s.size())));
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < d; ++i) outer *= s[i];
  for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
  const std::int64_t len = s[d], count = c.numel(idx);
  const std::byte *px = c.ptr(x), *pi = c.ptr(idx);
  std::byte* py = c.ptr(y);
  const DType di = c.storage(idx);
  const std::size_t es = dtype_size(c.storage(y));
  if (c.storage(x) != c.storage(y)) c.unsupported("index_select between storage types");
  return [=] {
    for (std::int64_t k = 0; k < count; ++k) {
      std::int64_t p = read_index(pi, di, k);
      if (p < -len || p >= len) index_error("index_select", p, len);
      if (p < 0) p += len;
      for (std::int64_t o = 0; o < outer; ++o)
        std::memcpy(py + static_cast<std::size_t>((o * count + k) * inner) * es, px + static_cast<std::size_t>((o * len + p) * inner) * es,
                    static_cast<std::size_t>(inner) * es);
    }
  };
}

NPUSIM_FUNC Fn bind_index_tensor(Ctx& c, const ops::IndexTensor::Attrs& a) {
  const ir::Node& n = c.node();
  const ir::TensorId x = n.inputs[0], y = n.outputs[0];
  ops::Specs specs;
  for (ir::TensorId t : n.inputs) specs.push_back({c.shape(t), c.g.tensor(t).dtype});
  const ops::IndexTensor::Layout l = ops::IndexTensor::layout(a, specs);
  const Shape& s = c.shape(x);
  const Strides xs = contiguous_strides(s);
  const std::vector<std::int64_t>& from = l.from;  // per output dimension: a kept dimension of x, or -1 - j for B's j
  // Bind time: each output element's offset from the kept dimensions and its position in B.
  const Shape& os = l.out;
  const std::int64_t count = numel(os), bcount = numel(l.index_shape);
  std::vector<std::int64_t> kept_off(static_cast<std::size_t>(count)), bpos(static_cast<std::size_t>(count));
  const Strides bst = contiguous_strides(l.index_shape);
  std::vector<std::int64_t> idx(os.size(), 0);
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t off = 0, b = 0;
    for (std::size_t d = 0; d < os.size(); ++d)
      if (from[d] >= 0) off += idx[d] * xs[static_cast<std::size_t>(from[d])];
      else b += idx[d] * bst[static_cast<std::size_t>(-1 - from[d])];
    kept_off[static_cast<std::size_t>(i)] = off, bpos[static_cast<std::size_t>(i)] = b;
    for (std::size_t d = os.size(); d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
  // The index tensors: pointer, storage type, strides over B, the dimension of x they index.
  struct Index {
    const std::byte* p;
    DType t;
    Strides st;
    std::int64_t size, stride;
  };
  std::vector<Index> ixs;
  for (std::size_t d = 0; d < s.size(); ++d)
    if (l.source[d] != 0) {
      const ir::TensorId t = n.inputs[l.source[d]];
      ixs.push_back({c.ptr(t), c.storage(t), broadcast_strides(c.shape(t), l.index_shape), s[d], xs[d]});
    }
  const std::byte* px = c.ptr(x);
  std::byte* py = c.ptr(y);
  if (c.storage(x) != c.storage(y)) c.unsupported("index between storage types");
  const std::size_t es = dtype_size(c.storage(y));
  const Shape bshape = l.index_shape;
  return [=] {
    // The indexed dimensions' offset for every position of B, read now (the indices are data).
    std::vector<std::int64_t> boff(static_cast<std::size_t>(bcount), 0), bi(bshape.size(), 0);
    for (std::int64_t b = 0; b < bcount; ++b) {
      for (const Index& ix : ixs) {
        std::int64_t io = 0;
        for (std::size_t j = 0; j < bshape.size(); ++j) io += bi[j] * ix.st[j];
        std::int64_t v = read_index(ix.p, ix.t, io);
        if (v < -ix.size || v >= ix.size) index_error("index", v, ix.size);
        if (v < 0) v += ix.size;
        boff[static_cast<std::size_t>(b)] += v * ix.stride;
      }
      for (std::size_t j = bshape.size(); j-- > 0;) {
        if (++bi[j] < bshape[j]) break;
        bi[j] = 0;
      }
    }
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t src = kept_off[static_cast<std::size_t>(i)] + boff[static_cast<std::size_t>(bpos[static_cast<std::size_t>(i)])];
      std::memcpy(py + static_cast<std::size_t>(i) * es, px + static_cast<std::size_t>(src) * es, es);
    }
  };
}

NPUSIM_FUNC Fn bind_rotary(Ctx& c) {
  const ir::TensorId x = c.in(0), cs = c.in(1), sn = c.in(2), y = c.out();
  const Shape& xs = c.shape(x);
  const std::int64_t D = xs.back(), half = D / 2, rows = c.numel(x) / D;
  const Strides cst = broadcast_strides(c.shape(cs), xs), sst = broadcast_strides(c.shape(sn), xs);
  if (cst.back() != 1 || sst.back() != 1) c.unsupported("rotary cos/sin must be contiguous along the head dim");
  const std::byte *px = c.ptr(x), *pc = c.ptr(cs), *ps = c.ptr(sn);
  std::byte* py = c.ptr(y);
  const DType dx = c.storage(x), dc = c.storage(cs), ds = c.storage(sn), dy = c.storage(y);
  const Strides xst = contiguous_strides(xs);
  return [=] {
    parallel_for(rows, 64, [&](std::int64_t r0, std::int64_t r1) {
      float* xr = row_buffer(0, D);
      float* cr = row_buffer(1, D);
      float* sr = row_buffer(2, D);
      float* out = row_buffer(3, D);
      for (std::int64_t r = r0; r < r1; ++r) {
        std::int64_t rem = r * D, co = 0, so = 0;
        for (std::size_t d = 0; d + 1 < xs.size(); ++d) {
          const std::int64_t i = rem / xst[d];
          rem %= xst[d];
          co += i * cst[d], so += i * sst[d];
        }
        load_row(dx, px + static_cast<std::size_t>(r * D) * dtype_size(dx), xr, D);
        load_row(dc, pc + static_cast<std::size_t>(co) * dtype_size(dc), cr, D);
        load_row(ds, ps + static_cast<std::size_t>(so) * dtype_size(ds), sr, D);
        for (std::int64_t i = 0; i < half; ++i) {
          out[i] = xr[i] * cr[i] - xr[i + half] * sr[i];
          out[i + half] = xr[i + half] * cr[i + half] + xr[i] * sr[i + half];
        }
        store_row(dy, out, py + static_cast<std::size_t>(r * D) * dtype_size(dy), D);
      }
    });
  };
}

NPUSIM_FUNC Fn bind_rotary_hop(Ctx& c) {
  const ir::Node& n = c.node();
  const ir::TensorId inv = n.inputs[0], pos = n.inputs[1], co = n.outputs[0], si = n.outputs[1];
  const std::int64_t half = c.numel(inv), D = 2 * half, count = c.numel(pos);
  const std::byte *pi = c.ptr(inv), *pp = c.ptr(pos);
  std::byte *pc = c.addr(co), *ps = c.addr(si);
  const DType di = c.storage(inv), dp = c.storage(pos), dc = c.storage(co), ds = c.storage(si);
  return [=] {
    float* f = row_buffer(0, half);
    float* cr = row_buffer(1, D);
    float* sr = row_buffer(2, D);
    load_row(di, pi, f, half);
    for (std::int64_t t = 0; t < count; ++t) {
      const float p = static_cast<float>(read_index(pp, dp, t));
      for (std::int64_t i = 0; i < half; ++i) {
        const float a = p * f[i];
        cr[i] = cr[i + half] = std::cos(a);
        sr[i] = sr[i + half] = std::sin(a);
      }
      if (pc) store_row(dc, cr, pc + static_cast<std::size_t>(t * D) * dtype_size(dc), D);
      if (ps) store_row(ds, sr, ps + static_cast<std::size_t>(t * D) * dtype_size(ds), D);
    }
  };
}

}  // namespace npusim::inline NPUSIM_ABI::cpu
