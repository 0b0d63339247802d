// Definitions for npusim/fusion/patterns.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include <algorithm>
#include <cmath>
#include "npusim/fusion/patterns.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {
namespace detail {

NPUSIM_FUNC std::int32_t skip_cast_back(const GraphView& v, TensorId t, std::vector<std::int32_t>& members) {
  std::int32_t p = v.producer(t);
  while (v.is<ops::ToDtype>(p) && v.only_consumer(v.out(p)) >= 0) {
    members.push_back(p);
    p = v.producer(v.in(p, 0));
  }
  return p;
}

NPUSIM_FUNC std::optional<std::pair<TensorId, std::int64_t>> gqa_source(const GraphView& v, TensorId t,
                                                                        std::vector<std::int32_t>& members) {
  std::int32_t r = v.producer(t);
  if (!(v.is<ops::Reshape>(r) || v.is<ops::View>(r)) || v.only_consumer(v.out(r)) < 0) return std::nullopt;
  std::int32_t e = v.producer(v.in(r, 0));
  if (!v.is<ops::Expand>(e) || v.only_consumer(v.out(e)) < 0) return std::nullopt;
  std::int32_t u = v.producer(v.in(e, 0));
  if (!v.is<ops::Unsqueeze>(u) || v.only_consumer(v.out(u)) < 0) return std::nullopt;
  const Shape& src = v.tensor(v.in(u, 0)).shape;
  const Shape& ex = v.tensor(v.out(e)).shape;
  const Shape& out = v.tensor(v.out(r)).shape;
  if (src.size() != 4 || ex.size() != 5 || out.size() != 4) return std::nullopt;
  if (v.tensor(v.out(u)).shape != Shape{src[0], src[1], 1, src[2], src[3]}) return std::nullopt;
  if (ex[0] != src[0] || ex[1] != src[1] || ex[3] != src[2] || ex[4] != src[3]) return std::nullopt;
  if (out != Shape{src[0], src[1] * ex[2], src[2], src[3]}) return std::nullopt;
  members.insert(members.end(), {u, e, r});
  return std::make_pair(v.in(u, 0), ex[2]);
}

NPUSIM_FUNC bool is_last2_transpose(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Transpose>(n)) return false;
  auto a = v.attrs<ops::Transpose>(n);
  auto r = static_cast<std::int64_t>(v.tensor(v.in(n, 0)).shape.size());
  if (r < 2) return false;
  auto d0 = normalize_dim(a.dim0, r), d1 = normalize_dim(a.dim1, r);
  return std::min(d0, d1) == r - 2 && std::max(d0, d1) == r - 1;
}

NPUSIM_FUNC bool is_last_dim(const GraphView& v, std::int64_t dim, TensorId t) {
  return normalize_dim(dim, static_cast<std::int64_t>(v.tensor(t).shape.size())) == static_cast<std::int64_t>(v.tensor(t).shape.size()) - 1;
}

NPUSIM_FUNC TensorId conv_bn_relu_chain(const GraphView& v, std::int32_t n, Match& m) {
  m.nodes.push_back(n);
  TensorId cur = v.out(n);
  bool bn = false, relu = false;
  if (std::int32_t c = v.only_consumer(cur); v.is<ops::BatchNorm>(c) && v.in(c, 0) == cur) m.nodes.push_back(c), cur = v.out(c), bn = true;
  if (std::int32_t c = v.only_consumer(cur); v.is<ops::Relu>(c)) m.nodes.push_back(c), cur = v.out(c), relu = true;
  m.params.set("has_bn", ir::AttrValue(bn));
  m.params.set("has_relu", ir::AttrValue(relu));
  return cur;
}

}  // namespace detail
}  // namespace npusim::inline NPUSIM_ABI::fusion

namespace npusim::inline NPUSIM_ABI::fusion {

NPUSIM_FUNC std::optional<Match> ConvBnRelu::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Conv2d>(n)) return std::nullopt;
  Match m;
  detail::conv_bn_relu_chain(v, n, m);
  if (m.nodes.size() == 1) return std::nullopt;
  return m;
}

NPUSIM_FUNC std::optional<Match> ConvMaxPool::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Conv2d>(n)) return std::nullopt;
  Match m;
  const std::int32_t pool = v.only_consumer(detail::conv_bn_relu_chain(v, n, m));
  if (!v.is<ops::MaxPool2d>(pool) || v.node(pool).outputs.size() != 1) return std::nullopt;
  m.nodes.push_back(pool);
  return m;
}

NPUSIM_FUNC std::optional<Match> ConvAddRelu::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Conv2d>(n)) return std::nullopt;
  const TensorId y = v.out(n);
  const std::int32_t a = v.only_consumer(y);
  if (!v.is<ops::Add>(a) || v.node(a).inputs.size() != 2 || v.attrs<ops::Add>(a).alpha.value != 1.0) return std::nullopt;
  const TensorId r = v.in(a, 0) == y ? v.in(a, 1) : v.in(a, 0);
  if (r == y || v.tensor(r).shape != v.tensor(y).shape || v.tensor(r).dtype != v.tensor(y).dtype) return std::nullopt;
  Match m;
  m.nodes = {n, a};
  m.inputs = v.node(n).inputs;
  m.inputs.push_back(r);
  bool relu = false;
  if (std::int32_t c = v.only_consumer(v.out(a)); v.is<ops::Relu>(c)) m.nodes.push_back(c), relu = true;
  m.params.set("has_relu", ir::AttrValue(relu));
  return m;
}

NPUSIM_FUNC std::optional<Match> AddRelu::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Add>(n) || v.node(n).inputs.size() != 2 || v.attrs<ops::Add>(n).alpha.value != 1.0) return std::nullopt;
  std::int32_t c = v.only_consumer(v.out(n));
  if (!v.is<ops::Relu>(c)) return std::nullopt;
  return Match{{n, c}, {v.in(n, 0), v.in(n, 1)}, {}};
}

NPUSIM_FUNC std::optional<Match> RmsNorm::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::PowScalar>(n) || v.attrs<ops::PowScalar>(n).exponent.value != 2.0) return std::nullopt;
  Match m;
  const TensorId xf = v.in(n, 0);
  m.nodes.push_back(n);
  std::int32_t mean = v.only_consumer(v.out(n));
  if (!v.is<ops::Mean>(mean)) return std::nullopt;
  auto ma = v.attrs<ops::Mean>(mean);
  if (!ma.dim || ma.dim->size() != 1 || !detail::is_last_dim(v, (*ma.dim)[0], v.out(n)) || !ma.keepdim) return std::nullopt;
  std::int32_t add = v.only_consumer(v.out(mean));
  auto eps = v.is<ops::Add>(add) ? v.scalar_other(add) : std::nullopt;
  if (!eps) return std::nullopt;
  std::int32_t rs = v.only_consumer(v.out(add));
  if (!v.is<ops::Rsqrt>(rs)) return std::nullopt;
  std::int32_t mul = v.only_consumer(v.out(rs));
  if (!v.is<ops::Mul>(mul) || v.node(mul).inputs.size() != 2) return std::nullopt;
  TensorId other = v.in(mul, 0) == v.out(rs) ? v.in(mul, 1) : v.in(mul, 0);
  if (other != xf) return std::nullopt;
  m.nodes.insert(m.nodes.end(), {mean, add, rs, mul});
  // The float32 cast in front belongs to the kernel when nothing else reads its output.
  TensorId x = xf;
  std::int32_t cast = v.producer(xf);
  if (v.is<ops::ToDtype>(cast) && v.consumers(xf).size() == 2 && !v.is_graph_output(xf)) {
    m.nodes.push_back(cast);
    x = v.in(cast, 0);
  }
  TensorId cur = v.out(mul);
  if (std::int32_t c = v.only_consumer(cur); v.is<ops::ToDtype>(c)) m.nodes.push_back(c), cur = v.out(c);
  bool has_w = false;
  TensorId w = ir::no_tensor;
  if (std::int32_t c = v.only_consumer(cur); v.is<ops::Mul>(c) && v.node(c).inputs.size() == 2) {
    TensorId o = v.in(c, 0) == cur ? v.in(c, 1) : v.in(c, 0);
    const Shape& ws = v.tensor(o).shape;
    if (ws.size() == 1 && ws[0] == v.tensor(cur).shape.back()) m.nodes.push_back(c), has_w = true, w = o;
  }
  m.inputs = {x};
  if (has_w) m.inputs.push_back(w);
  m.params.set("eps", ir::AttrValue(*eps));
  m.params.set("has_weight", ir::AttrValue(has_w));
  return m;
}

namespace detail {
// t = index_select(src, 0, idx) or src[idx] (index.Tensor with one index), read only by `user`;
// returns (src, idx).
inline std::optional<std::pair<TensorId, TensorId>> row_gather(const GraphView& v, TensorId t, std::int32_t user, std::vector<std::int32_t>& members) {
  const std::int32_t p = v.producer(t);
  if (p < 0 || v.only_consumer(t) != user || v.node(p).inputs.size() != 2) return std::nullopt;
  const bool select = v.is<ops::IndexSelect>(p) && normalize_dim(v.attrs<ops::IndexSelect>(p).dim, static_cast<std::int64_t>(v.tensor(v.in(p, 0)).shape.size())) == 0;
  const bool index = v.node(p).op_type == "aten.index.Tensor";
  if (!select && !index) return std::nullopt;
  if (v.tensor(v.in(p, 1)).shape.size() != 1 || !is_integral(v.tensor(v.in(p, 1)).dtype)) return std::nullopt;
  members.push_back(p);
  return std::make_pair(v.in(p, 0), v.in(p, 1));
}

inline bool last_dim_view(const GraphView& v, std::int32_t n, bool squeeze) {
  const TensorId t = squeeze ? v.in(n, 0) : v.out(n);
  const auto r = static_cast<std::int64_t>(v.tensor(t).shape.size());
  if (r == 0 || v.tensor(t).shape.back() != 1) return false;
  if (squeeze) {
    auto d = v.attrs<ops::Squeeze>(n).dim;
    return d && d->size() == 1 && normalize_dim((*d)[0], r) == r - 1;
  }
  return normalize_dim(v.attrs<ops::Unsqueeze>(n).dim, r) == r - 1;
}

// t = squeeze(matmul(A, unsqueeze(vec, -1)), -1), each read once: A, vec, and the nodes reading them.
struct MatVec {
  TensorId a, vec;
  std::int32_t mm, un;
};
inline std::optional<MatVec> matvec(const GraphView& v, TensorId t, std::vector<std::int32_t>& members) {
  const std::int32_t sq = v.producer(t);
  if (!v.is<ops::Squeeze>(sq) || !last_dim_view(v, sq, true)) return std::nullopt;
  const std::int32_t mm = v.producer(v.in(sq, 0));
  if (!v.is<ops::Matmul>(mm) || v.only_consumer(v.out(mm)) != sq) return std::nullopt;
  const std::int32_t un = v.producer(v.in(mm, 1));
  if (!v.is<ops::Unsqueeze>(un) || v.only_consumer(v.out(un)) != mm || !last_dim_view(v, un, false)) return std::nullopt;
  members.insert(members.end(), {sq, mm, un});
  return MatVec{v.in(mm, 0), v.in(un, 0), mm, un};
}
}  // namespace detail

NPUSIM_FUNC std::optional<Match> Moe::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::IndexAdd>(n) || v.attrs<ops::IndexAdd>(n).alpha.value != 1.0) return std::nullopt;
  const Shape& ys = v.tensor(v.out(n)).shape;
  if (ys.size() != 2 || normalize_dim(v.attrs<ops::IndexAdd>(n).dim, 2) != 0) return std::nullopt;
  Match m;
  m.nodes.push_back(n);
  const std::int32_t zl = v.producer(v.in(n, 0));
  if (!v.is<ops::ZerosLike>(zl) || v.only_consumer(v.out(zl)) != n) return std::nullopt;
  m.nodes.push_back(zl);
  const TensorId tok = v.in(n, 1);
  // o * w [-> to]
  const std::int32_t mw = detail::skip_cast_back(v, v.in(n, 2), m.nodes);
  if (!v.is<ops::Mul>(mw) || v.node(mw).inputs.size() != 2 || v.only_consumer(v.out(mw)) < 0) return std::nullopt;
  m.nodes.push_back(mw);
  std::int32_t uw = v.producer(v.in(mw, 1));
  TensorId o = v.in(mw, 0);
  if (!v.is<ops::Unsqueeze>(uw)) uw = v.producer(v.in(mw, 0)), o = v.in(mw, 1);
  if (!v.is<ops::Unsqueeze>(uw) || v.only_consumer(v.out(uw)) != mw || !detail::last_dim_view(v, uw, false)) return std::nullopt;
  m.nodes.push_back(uw);
  const TensorId w = v.in(uw, 0);
  if (v.only_consumer(o) != mw) return std::nullopt;
  // o = down[ids] @ h
  auto down_mv = detail::matvec(v, o, m.nodes);
  if (!down_mv) return std::nullopt;
  auto down = detail::row_gather(v, down_mv->a, down_mv->mm, m.nodes);
  if (!down) return std::nullopt;
  const auto [down_w, ids] = *down;
  // h = silu(g) * u, g, u = chunk(gu, 2, -1)
  const std::int32_t hm = v.producer(down_mv->vec);
  if (v.only_consumer(down_mv->vec) != down_mv->un) return std::nullopt;
  if (!v.is<ops::Mul>(hm) || v.node(hm).inputs.size() != 2) return std::nullopt;
  const std::int32_t ch = v.producer(v.in(hm, 0)) >= 0 && v.is<ops::Silu>(v.producer(v.in(hm, 0))) ? v.producer(v.in(hm, 0)) : v.producer(v.in(hm, 1));
  if (!v.is<ops::Silu>(ch) || v.only_consumer(v.out(ch)) != hm) return std::nullopt;
  const TensorId up = v.in(hm, 0) == v.out(ch) ? v.in(hm, 1) : v.in(hm, 0);
  // chunk(gu, 2, -1), or the split into two halves a decomposed export makes of it.
  const std::int32_t chunk = v.producer(v.in(ch, 0));
  if (!(v.is<ops::Chunk>(chunk) || v.is<ops::Split>(chunk)) || v.node(chunk).outputs.size() != 2 || v.out(chunk, 0) != v.in(ch, 0) ||
      v.out(chunk, 1) != up)
    return std::nullopt;
  if (v.only_consumer(up) != hm || v.only_consumer(v.in(ch, 0)) != ch) return std::nullopt;
  const TensorId gu = v.in(chunk, 0);
  const std::int64_t split_dim = v.is<ops::Chunk>(chunk) ? v.attrs<ops::Chunk>(chunk).dim : v.attrs<ops::Split>(chunk).dim;
  if (!detail::is_last_dim(v, split_dim, gu) || v.only_consumer(gu) != chunk) return std::nullopt;
  if (v.tensor(up).shape != v.tensor(v.in(ch, 0)).shape || 2 * v.tensor(up).shape.back() != v.tensor(gu).shape.back()) return std::nullopt;
  m.nodes.insert(m.nodes.end(), {hm, ch, chunk});
  auto gu_mv = detail::matvec(v, gu, m.nodes);
  if (!gu_mv) return std::nullopt;
  auto gate_up = detail::row_gather(v, gu_mv->a, gu_mv->mm, m.nodes);
  auto xs = detail::row_gather(v, gu_mv->vec, gu_mv->un, m.nodes);
  if (!gate_up || !xs || gate_up->second != ids || xs->second != tok) return std::nullopt;
  const TensorId x = xs->first, gate_up_w = gate_up->first;
  // Shapes: x [T, H] as y; gate_up [E, 2I, H]; down [E, H, I]; tok, ids, w [S].
  const Shape &gs = v.tensor(gate_up_w).shape, &ds = v.tensor(down_w).shape;
  const std::int64_t S = v.tensor(tok).shape[0];
  if (v.tensor(x).shape != ys || v.tensor(x).dtype != v.tensor(v.out(n)).dtype || gs.size() != 3 || ds.size() != 3) return std::nullopt;
  if (gs[0] != ds[0] || gs[2] != ys[1] || gs[1] != 2 * ds[2] || ds[1] != ys[1]) return std::nullopt;
  if (v.tensor(ids).shape != Shape{S} || v.tensor(w).shape != Shape{S}) return std::nullopt;
  if (!is_floating(v.tensor(w).dtype) || !is_floating(v.tensor(x).dtype)) return std::nullopt;
  // The kernel produces y alone: nothing outside may read a member's other values.
  for (std::int32_t k : m.nodes) {
    if (k == n) continue;
    for (TensorId t : v.node(k).outputs) {
      if (v.is_graph_output(t)) return std::nullopt;
      for (std::int32_t c : v.consumers(t))
        if (std::find(m.nodes.begin(), m.nodes.end(), c) == m.nodes.end()) return std::nullopt;
    }
  }
  m.inputs = {x, tok, ids, w, gate_up_w, down_w};
  return m;
}

NPUSIM_FUNC std::optional<Match> SiluGate::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Silu>(n)) return std::nullopt;
  std::int32_t mul = v.only_consumer(v.out(n));
  if (!v.is<ops::Mul>(mul) || v.node(mul).inputs.size() != 2) return std::nullopt;
  TensorId b = v.in(mul, 0) == v.out(n) ? v.in(mul, 1) : v.in(mul, 0);
  if (b == v.out(n) || v.tensor(b).shape != v.tensor(v.out(mul)).shape || v.tensor(v.in(n, 0)).shape != v.tensor(b).shape) return std::nullopt;
  return Match{{n, mul}, {v.in(n, 0), b}, {}};
}

NPUSIM_FUNC std::optional<Match> MaskedSoftmax::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Softmax>(n) || !detail::is_last_dim(v, v.attrs<ops::Softmax>(n).dim, v.in(n, 0))) return std::nullopt;
  std::int32_t add = v.producer(v.in(n, 0));
  if (!v.is<ops::Add>(add) || v.node(add).inputs.size() != 2 || v.only_consumer(v.out(add)) != n) return std::nullopt;
  if (v.attrs<ops::Add>(add).alpha.value != 1.0) return std::nullopt;
  Match m;
  m.nodes = {add, n};
  TensorId x = v.in(add, 0), mask = v.in(add, 1);
  if (v.tensor(x).shape != v.tensor(v.out(add)).shape) std::swap(x, mask);
  if (v.tensor(x).shape != v.tensor(v.out(add)).shape) return std::nullopt;
  double scale = 1.0;
  std::int32_t mul = v.producer(x);
  if (v.is<ops::Mul>(mul) && v.scalar_other(mul) && v.only_consumer(v.out(mul)) == add) {
    scale = *v.scalar_other(mul);
    m.nodes.push_back(mul);
    x = v.in(mul, 0);
  }
  if (std::int32_t c = v.only_consumer(v.out(n)); v.is<ops::ToDtype>(c)) m.nodes.push_back(c);
  m.inputs = {x, mask};
  m.params.set("scale", ir::AttrValue(scale));
  return m;
}

NPUSIM_FUNC std::optional<Match> Attention::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Softmax>(n) || !detail::is_last_dim(v, v.attrs<ops::Softmax>(n).dim, v.in(n, 0))) return std::nullopt;
  Match m;
  m.nodes.push_back(n);
  TensorId s = v.in(n, 0);
  std::optional<TensorId> mask;
  double scale = 1.0;
  std::int32_t p = v.producer(s);
  if (v.is<ops::Add>(p) && v.node(p).inputs.size() == 2 && v.only_consumer(v.out(p)) == n) {
    TensorId a = v.in(p, 0), b = v.in(p, 1);
    if (v.tensor(a).shape != v.tensor(v.out(p)).shape) std::swap(a, b);
    m.nodes.push_back(p), mask = b, s = a, p = v.producer(s);
  }
  if (v.is<ops::Mul>(p) && v.scalar_other(p) && v.only_consumer(v.out(p)) >= 0) {
    scale = *v.scalar_other(p);
    m.nodes.push_back(p), s = v.in(p, 0), p = v.producer(s);
  }
  if (!v.is<ops::Matmul>(p) || v.only_consumer(v.out(p)) < 0) return std::nullopt;
  const std::int32_t mm1 = p;
  m.nodes.push_back(mm1);
  const TensorId q = v.in(mm1, 0);
  std::int32_t t = v.producer(v.in(mm1, 1));
  if (!detail::is_last2_transpose(v, t) || v.only_consumer(v.out(t)) != mm1) return std::nullopt;
  m.nodes.push_back(t);
  TensorId k = v.in(t, 0);
  std::int64_t group = 1;
  if (auto src = detail::gqa_source(v, k, m.nodes)) k = src->first, group = src->second;
  // Forward: softmax [-> to] -> matmul(., V').
  TensorId pr = v.out(n);
  if (std::int32_t c = v.only_consumer(pr); v.is<ops::ToDtype>(c)) m.nodes.push_back(c), pr = v.out(c);
  std::int32_t mm2 = v.only_consumer(pr);
  if (!v.is<ops::Matmul>(mm2) || v.in(mm2, 0) != pr) return std::nullopt;
  m.nodes.push_back(mm2);
  TensorId val = v.in(mm2, 1);
  std::int64_t vgroup = 1;
  if (auto src = detail::gqa_source(v, val, m.nodes)) val = src->first, vgroup = src->second;
  if (vgroup != group) return std::nullopt;
  const Shape &qs = v.tensor(q).shape, &ks = v.tensor(k).shape, &vs = v.tensor(val).shape;
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4 || ks[1] * group != qs[1] || vs[1] != ks[1] || ks[2] != vs[2] || ks[3] != qs[3])
    return std::nullopt;
  m.inputs = {q, k, val};
  if (mask) m.inputs.push_back(*mask);
  m.params.set("scale", ir::AttrValue(scale));
  m.params.set("group", ir::AttrValue(group));
  m.params.set("has_mask", ir::AttrValue(mask.has_value()));
  return m;
}

namespace detail {
// Node t transposes (dims d0 != d1, the last dim not moved) and is a copy, not a view.
inline std::optional<std::pair<std::int64_t, std::int64_t>> copying_transpose(const GraphView& v, std::int32_t t) {
  if (!v.is<ops::Transpose>(t) || v.taken(t)) return std::nullopt;
  const Shape& in = v.tensor(v.in(t, 0)).shape;
  const auto r = static_cast<std::int64_t>(in.size());
  if (r < 2) return std::nullopt;
  const auto a = v.attrs<ops::Transpose>(t);
  const std::int64_t d0 = normalize_dim(a.dim0, r), d1 = normalize_dim(a.dim1, r);
  // Swapping a size-1 dim keeps the memory order: a view (fusion::moves_no_data), nothing to absorb.
  if (d0 == d1 || d0 == r - 1 || d1 == r - 1 || in[static_cast<std::size_t>(d0)] == 1 || in[static_cast<std::size_t>(d1)] == 1) return std::nullopt;
  return std::pair{std::min(d0, d1), std::max(d0, d1)};
}
}  // namespace detail

NPUSIM_FUNC std::optional<Match> TransposedRotary::match(const GraphView& v, std::int32_t n) {
  auto r = Rotary::match(v, n);
  if (!r) return std::nullopt;
  const TensorId x = r->inputs[0];
  const std::int32_t t = v.producer(x);
  const auto dims = detail::copying_transpose(v, t);
  if (!dims || v.is_graph_output(x)) return std::nullopt;
  for (auto c : v.consumers(x))
    if (std::find(r->nodes.begin(), r->nodes.end(), c) == r->nodes.end()) return std::nullopt;
  r->nodes.push_back(t);
  r->inputs[0] = v.in(t, 0);
  r->params.set("dim0", ir::AttrValue(dims->first));
  r->params.set("dim1", ir::AttrValue(dims->second));
  return r;
}

NPUSIM_FUNC std::optional<Match> AttentionTransposed::match(const GraphView& v, std::int32_t n) {
  auto a = Attention::match(v, n);
  if (!a) return std::nullopt;
  // The product with V: the member whose output no member reads.
  std::int32_t mm2 = -1;
  for (auto m : a->nodes) {
    if (!v.is<ops::Matmul>(m)) continue;
    bool inner = false;
    for (auto c : v.consumers(v.out(m))) inner = inner || std::find(a->nodes.begin(), a->nodes.end(), c) != a->nodes.end();
    if (!inner) mm2 = m;
  }
  if (mm2 < 0) return std::nullopt;
  const std::int32_t t = v.only_consumer(v.out(mm2));
  const auto dims = t >= 0 ? detail::copying_transpose(v, t) : std::nullopt;
  if (!dims || *dims != std::pair<std::int64_t, std::int64_t>{1, 2} || v.tensor(v.out(mm2)).shape.size() != 4) return std::nullopt;
  a->nodes.push_back(t);
  return a;
}

NPUSIM_FUNC std::optional<Match> GqaMatmul::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Matmul>(n)) return std::nullopt;
  Match m;
  m.nodes = {n};
  TensorId b = v.in(n, 1);
  bool trans = false;
  if (std::int32_t t = v.producer(b); detail::is_last2_transpose(v, t) && v.only_consumer(v.out(t)) == n) {
    m.nodes.push_back(t), b = v.in(t, 0), trans = true;
  }
  auto src = detail::gqa_source(v, b, m.nodes);
  if (!src || v.tensor(v.in(n, 0)).shape.size() != 4) return std::nullopt;
  m.inputs = {v.in(n, 0), src->first};
  m.params.set("group", ir::AttrValue(src->second));
  m.params.set("trans_b", ir::AttrValue(trans));
  return m;
}

NPUSIM_FUNC std::optional<Match> MatmulTransB::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Matmul>(n)) return std::nullopt;
  std::int32_t t = v.producer(v.in(n, 1));
  if (!detail::is_last2_transpose(v, t) || v.only_consumer(v.out(t)) != n) return std::nullopt;
  if (v.tensor(v.in(n, 0)).shape.size() < 2) return std::nullopt;
  return Match{{n, t}, {v.in(n, 0), v.in(t, 0)}, {}};
}

NPUSIM_FUNC std::optional<Match> Rotary::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::Add>(n) || v.node(n).inputs.size() != 2) return std::nullopt;
  for (int order = 0; order < 2; ++order) {
    std::int32_t m1 = v.producer(v.in(n, static_cast<std::size_t>(order))), m2 = v.producer(v.in(n, static_cast<std::size_t>(1 - order)));
    if (!v.is<ops::Mul>(m1) || !v.is<ops::Mul>(m2) || v.node(m1).inputs.size() != 2 || v.node(m2).inputs.size() != 2) continue;
    if (v.only_consumer(v.out(m1)) != n || v.only_consumer(v.out(m2)) != n) continue;
    for (int k = 0; k < 2; ++k) {
      std::int32_t cat = v.producer(v.in(m2, static_cast<std::size_t>(k)));
      TensorId sin = v.in(m2, static_cast<std::size_t>(1 - k));
      if (!v.is<ops::Cat>(cat) || v.node(cat).inputs.size() != 2 || v.only_consumer(v.out(cat)) != m2) continue;
      std::int32_t neg = v.producer(v.in(cat, 0)), s1 = v.producer(v.in(cat, 1));
      if (!v.is<ops::Neg>(neg) || v.only_consumer(v.out(neg)) != cat || !v.is<ops::Slice>(s1) || v.only_consumer(v.out(s1)) != cat) continue;
      std::int32_t s2 = v.producer(v.in(neg, 0));
      if (!v.is<ops::Slice>(s2) || v.only_consumer(v.out(s2)) != neg) continue;
      const TensorId x = v.in(s1, 0);
      if (v.in(s2, 0) != x) continue;
      const Shape& xs = v.tensor(x).shape;
      if (xs.empty() || xs.back() % 2) continue;
      const std::int64_t half = xs.back() / 2;
      auto a1 = v.attrs<ops::Slice>(s1), a2 = v.attrs<ops::Slice>(s2);
      auto r1 = ops::clamp_slice(xs.back(), a1.start, a1.end, a1.step), r2 = ops::clamp_slice(xs.back(), a2.start, a2.end, a2.step);
      if (!detail::is_last_dim(v, a1.dim, x) || !detail::is_last_dim(v, a2.dim, x) || r1.start != 0 || r1.length != half || r1.step != 1 ||
          r2.start != half || r2.length != half || r2.step != 1 || !detail::is_last_dim(v, v.attrs<ops::Cat>(cat).dim, v.out(cat)))
        continue;
      // x * cos
      TensorId cos;
      if (v.in(m1, 0) == x) cos = v.in(m1, 1);
      else if (v.in(m1, 1) == x) cos = v.in(m1, 0);
      else continue;
      if (v.tensor(v.out(n)).shape != xs) continue;
      return Match{{n, m1, m2, cat, neg, s1, s2}, {x, cos, sin}, {}};
    }
  }
  return std::nullopt;
}

namespace detail {
// A linear (x, W[, b]) over a 2-D weight.
inline bool is_linear(const GraphView& v, std::int32_t n) {
  return v.is<ops::Linear>(n) && v.node(n).inputs.size() >= 2 && v.node(n).inputs.size() <= 3 && v.tensor(v.in(n, 1)).shape.size() == 2 &&
         !v.tensor(v.in(n, 0)).shape.empty();
}
inline bool gemv_sized(const GraphView& v, std::int32_t lin) {
  const Shape& x = v.tensor(v.in(lin, 0)).shape;
  const std::int64_t k = x.back(), rows = k ? numel(x) / k : 0;
  return rows >= 1 && rows <= gemv_rows;
}
// Can linears a and b share a launch: same weight dtype and block format, same output dtype.
inline bool same_linear_kind(const GraphView& v, std::int32_t a, std::int32_t b) {
  return v.tensor(v.in(a, 1)).dtype == v.tensor(v.in(b, 1)).dtype && ops::weight_block_format(v.node(a)) == ops::weight_block_format(v.node(b)) &&
         v.tensor(v.out(a)).dtype == v.tensor(v.out(b)).dtype;
}
// Up to three linears of x in node order, each of the first's kind (GEMV-sized where `gemv`), not
// yet fused.
inline std::vector<std::int32_t> linears_of(const GraphView& v, TensorId x, bool gemv) {
  std::vector<std::int32_t> out;
  for (auto c : v.consumers(x)) {
    if (out.size() == 3) break;
    if (v.taken(c) || !is_linear(v, c) || v.in(c, 0) != x || (gemv && !gemv_sized(v, c)) || (!out.empty() && !same_linear_kind(v, out[0], c)))
      continue;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace detail

NPUSIM_FUNC std::optional<Match> LinearAdd::match(const GraphView& v, std::int32_t n) {
  if (!detail::is_linear(v, n)) return std::nullopt;
  const TensorId x = v.in(n, 0), y1 = v.out(n);
  const std::int32_t a = v.only_consumer(y1);
  if (!v.is<ops::Add>(a) || v.node(a).inputs.size() != 2 || v.attrs<ops::Add>(a).alpha.value != 1.0) return std::nullopt;
  const TensorId r = v.in(a, 0) == y1 ? v.in(a, 1) : v.in(a, 0), y = v.out(a);
  if (r == y1 || r == x || v.tensor(r).shape != v.tensor(y).shape || v.tensor(y1).shape != v.tensor(y).shape || v.tensor(r).dtype != v.tensor(y).dtype)
    return std::nullopt;
  Match m;
  m.nodes = {n, a};
  m.inputs = v.node(n).inputs;
  m.inputs.push_back(r);
  m.params.set("has_bias", ir::AttrValue(v.node(n).inputs.size() > 2));
  return m;
}

NPUSIM_FUNC std::optional<Match> LinearSiluGate::match(const GraphView& v, std::int32_t n) {
  auto sg = SiluGate::match(v, n);
  if (!sg) return std::nullopt;
  const std::int32_t gate = v.producer(sg->inputs[0]), up = v.producer(sg->inputs[1]);
  if (!detail::is_linear(v, gate) || !detail::is_linear(v, up) || gate == up || v.node(gate).inputs.size() != 2 || v.node(up).inputs.size() != 2 ||
      v.in(gate, 0) != v.in(up, 0) || v.only_consumer(sg->inputs[0]) != sg->nodes[0] || v.only_consumer(sg->inputs[1]) != sg->nodes[1] ||
      v.tensor(v.in(gate, 1)).shape != v.tensor(v.in(up, 1)).shape || !detail::same_linear_kind(v, gate, up))
    return std::nullopt;
  return Match{{gate, up, sg->nodes[0], sg->nodes[1]}, {v.in(gate, 0), v.in(gate, 1), v.in(up, 1)}, {}};
}

NPUSIM_FUNC std::optional<Match> LinearGroup::match(const GraphView& v, std::int32_t n) {
  Match m;
  std::vector<std::int32_t> lins;
  if (v.is<ops::PowScalar>(n)) {
    auto norm = RmsNorm::match(v, n);
    if (!norm || norm->inputs.size() != 2) return std::nullopt;
    const TensorId h = v.out(*std::max_element(norm->nodes.begin(), norm->nodes.end()));
    lins = detail::linears_of(v, h, true);
    if (lins.empty() || v.is_graph_output(h) || v.consumers(h).size() != lins.size() || v.tensor(h).dtype != v.tensor(norm->inputs[0]).dtype)
      return std::nullopt;
    std::int64_t rows = 0;
    for (auto l : lins) {
      if (ops::weight_block_format(v.node(l))) return std::nullopt;  // the quantized GEMV reads x as stored
      rows += v.tensor(v.in(l, 1)).shape[0];
    }
    if (rows > folded_norm_rows) return std::nullopt;
    m.nodes = norm->nodes;
    m.inputs = norm->inputs;
    m.params.set("has_norm", ir::AttrValue(true));
    m.params.set("eps", *norm->params.find("eps"));
  } else {
    if (!detail::is_linear(v, n)) return std::nullopt;
    lins = detail::linears_of(v, v.in(n, 0), false);
    if (lins.size() < 2 || lins[0] != n) return std::nullopt;
    m.inputs = {v.in(n, 0)};
    m.params.set("has_norm", ir::AttrValue(false));
  }
  for (auto l : lins) {
    m.nodes.push_back(l);
    m.inputs.insert(m.inputs.end(), v.node(l).inputs.begin() + 1, v.node(l).inputs.end());
  }
  return m;
}

NPUSIM_FUNC std::optional<Match> RopeKv::match(const GraphView& v, std::int32_t n) {
  if (!v.is<ops::IndexCopy>(n) || v.node(n).inputs.size() != 3) return std::nullopt;
  const TensorId kc = v.in(n, 0), pos = v.in(n, 1), kr = v.in(n, 2);
  if (v.only_consumer(kr) != n) return std::nullopt;
  auto rk = Rotary::match(v, v.producer(kr));
  if (!rk) return std::nullopt;
  const TensorId xk = rk->inputs[0], cos = rk->inputs[1], sin = rk->inputs[2];
  const Shape &ks = v.tensor(xk).shape, &cache = v.tensor(kc).shape;
  auto dim2 = [&](std::int32_t c) { return normalize_dim(v.attrs<ops::IndexCopy>(c).dim, static_cast<std::int64_t>(v.tensor(v.in(c, 0)).shape.size())) == 2; };
  // A cache written in place: a graph input only this write reads.
  auto in_place = [&](TensorId c) { return v.tensor(c).kind == ir::TensorKind::input && v.consumers(c).size() == 1 && !v.is_graph_output(c); };
  if (ks.size() != 4 || cache.size() != 4 || !dim2(n) || ks[3] != cache[3] || ks[0] * ks[1] != cache[0] * cache[1] || !in_place(kc)) return std::nullopt;
  std::int32_t cv = -1;
  for (auto c : v.consumers(pos))
    if (c != n && !v.taken(c) && v.is<ops::IndexCopy>(c) && v.node(c).inputs.size() == 3 && v.in(c, 1) == pos && v.in(c, 0) != kc &&
        v.tensor(v.in(c, 2)).shape == ks && v.tensor(v.in(c, 0)).shape == cache && dim2(c) && in_place(v.in(c, 0))) {
      cv = c;
      break;
    }
  if (cv < 0) return std::nullopt;
  // q's rotary: another rotate-half over the same cos and sin.
  std::optional<Match> rq;
  for (auto c : v.consumers(cos)) {
    const std::int32_t add = v.only_consumer(v.out(c));
    if (add < 0 || v.taken(add) || std::find(rk->nodes.begin(), rk->nodes.end(), add) != rk->nodes.end()) continue;
    rq = Rotary::match(v, add);
    if (rq && rq->inputs[1] == cos && rq->inputs[2] == sin && rq->inputs[0] != xk) break;
    rq.reset();
  }
  if (!rq) return std::nullopt;
  Match m;
  m.nodes = rq->nodes;
  m.nodes.insert(m.nodes.end(), rk->nodes.begin(), rk->nodes.end());
  m.nodes.insert(m.nodes.end(), {n, cv});
  m.inputs = {rq->inputs[0], cos, sin, xk, v.in(cv, 2), pos, kc, v.in(cv, 0)};
  return m;
}

NPUSIM_FUNC std::optional<Match> LinearGroupRopeKv::match(const GraphView& v, std::int32_t n) {
  auto rope = RopeKv::match(v, n);
  if (!rope) return std::nullopt;
  const TensorId cos = rope->inputs[1], sin = rope->inputs[2], pos = rope->inputs[5], kc = rope->inputs[6], vc = rope->inputs[7];
  // The linear whose output reaches t through views alone (each read only by the next), or -1.
  std::vector<std::int32_t> views;
  auto source = [&](TensorId t) {
    for (auto c : v.consumers(t))
      if (std::find(rope->nodes.begin(), rope->nodes.end(), c) == rope->nodes.end()) return -1;
    for (;;) {
      const std::int32_t p = v.producer(t);
      if (p < 0 || v.taken(p) || v.is_graph_output(t)) return -1;
      if (detail::is_linear(v, p)) return p;
      if (!moves_no_data(v, p) || v.only_consumer(v.in(p, 0)) != p) return -1;
      views.push_back(p);
      t = v.in(p, 0);
    }
  };
  const std::int32_t lq = source(rope->inputs[0]), lk = source(rope->inputs[3]), lv = source(rope->inputs[4]);
  if (lq < 0 || !(lq < lk && lk < lv)) return std::nullopt;
  const TensorId x = v.in(lq, 0);
  const Shape& xs = v.tensor(x).shape;
  if (v.in(lk, 0) != x || v.in(lv, 0) != x || xs.empty() || numel(xs) != xs.back()) return std::nullopt;  // one token
  for (auto l : {lq, lk, lv})
    if (ops::weight_block_format(v.node(l)) || v.only_consumer(v.out(l)) < 0) return std::nullopt;
  // The linear_group of exactly these three: anchored at its RMSNorm's pow (a few nodes before the
  // first projection) or at the first projection.
  std::optional<Match> group;
  const std::int32_t h = v.producer(x);
  for (std::int32_t i = h; i >= 0 && i >= h - 16 && !group; --i)
    if (v.is<ops::PowScalar>(i)) group = LinearGroup::match(v, i);
  if (!group) group = LinearGroup::match(v, lq);
  if (!group) return std::nullopt;
  std::vector<std::int32_t> lins;
  for (auto m : group->nodes)
    if (detail::is_linear(v, m)) lins.push_back(m);
  if (lins != std::vector<std::int32_t>{lq, lk, lv}) return std::nullopt;
  const Shape& cache = v.tensor(kc).shape;
  const std::int64_t D = cache[3];
  if (cache[0] != 1 || D % 4 || numel(v.tensor(cos).shape) != D || numel(v.tensor(sin).shape) != D) return std::nullopt;
  Match m = std::move(*group);
  m.nodes.insert(m.nodes.end(), views.begin(), views.end());
  m.nodes.insert(m.nodes.end(), rope->nodes.begin(), rope->nodes.end());
  m.params.set("rope_at", ir::AttrValue(static_cast<std::int64_t>(m.inputs.size())));
  m.inputs.insert(m.inputs.end(), {cos, sin, pos, kc, vc});
  return m;
}

NPUSIM_FUNC bool EltwiseChain::pointwise(const GraphView& v, std::int32_t n) {
  return n >= 0 && ops::op_info(v.op(n)).op_class == ops::OpClass::elementwise && v.node(n).outputs.size() == 1;
}

NPUSIM_FUNC std::optional<Match> EltwiseChain::match(const GraphView& v, std::int32_t n) {
  if (v.taken(n) || !pointwise(v, n)) return std::nullopt;
  // Start only at a chain head: not fed by an untaken pointwise node of the same shape that
  // could have started the chain instead.
  const Shape& shape = v.tensor(v.out(n)).shape;
  for (TensorId t : v.node(n).inputs) {
    std::int32_t p = v.producer(t);
    if (pointwise(v, p) && !v.taken(p) && v.only_consumer(t) == n && v.tensor(t).shape == shape) return std::nullopt;
  }
  Match m;
  m.nodes = {n};
  TensorId cur = v.out(n);
  for (;;) {
    std::int32_t c = v.only_consumer(cur);
    if (!pointwise(v, c) || v.taken(c) || v.tensor(v.out(c)).shape != shape) break;
    m.nodes.push_back(c);
    cur = v.out(c);
  }
  if (m.nodes.size() < 2) return std::nullopt;
  return m;
}

}  // namespace npusim::inline NPUSIM_ABI::fusion
