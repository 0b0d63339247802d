// Definitions for npusim/passes/lower_einsum.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include <algorithm>

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/lower_einsum.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

namespace detail {

struct EinsumLowering {
  ir::Graph& g;
  std::vector<ir::Node>& out;
  std::string base;
  DType dtype;

  struct Term {
    TensorId t;
    std::vector<int> labels;
    Shape shape;
  };

  static bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }
  static ir::AttrValue list(const std::vector<std::int64_t>& v) {
    ir::AttrList l;
    for (auto x : v) l.emplace_back(x);
    return l;
  }

  TensorId emit(const char* op, std::vector<TensorId> in, ir::AttrMap a, const Shape& shape, TensorId into = ir::no_tensor) {
    if (into == ir::no_tensor) {
      ir::TensorInfo t;
      t.name = fresh_name(g, base + "_" + std::string(op).substr(5, std::string(op).find('.', 5) - 5));
      t.shape = shape;
      t.dtype = dtype;
      into = g.add_tensor(std::move(t));
    }
    out.push_back({g.tensor(into).name, op, std::move(in), {into}, std::move(a)});
    return into;
  }

  std::int64_t size_of(const Term& t, int l) const {
    auto it = std::find(t.labels.begin(), t.labels.end(), l);
    return it == t.labels.end() ? 1 : t.shape[static_cast<std::size_t>(it - t.labels.begin())];
  }

  // A label repeated in the term (a diagonal): its occurrences brought next to the first one
  // (permute), merged into one dimension (reshape), and the diagonal read as one stepped slice of
  // it: with k occurrences of size n, the entries (i, ..., i) lie 1 + n + ... + n^(k-1) apart.
  // The result has each label once, in first-occurrence order (as the reference's diagonal).
  Term diagonals(Term t) {
    for (std::size_t d = 0; d < t.labels.size(); ++d) {
      const int l = t.labels[d];
      std::vector<std::int64_t> perm;
      for (std::size_t e = 0; e <= d; ++e) perm.push_back(static_cast<std::int64_t>(e));
      for (std::size_t e = d + 1; e < t.labels.size(); ++e)
        if (t.labels[e] == l) perm.push_back(static_cast<std::int64_t>(e));
      const std::size_t k = perm.size() - d;  // occurrences of l
      if (k < 2) continue;
      Term r{ir::no_tensor, {}, {}};
      for (std::size_t e = d + 1; e < t.labels.size(); ++e)
        if (t.labels[e] != l) perm.push_back(static_cast<std::int64_t>(e));
      Shape ps;
      for (std::int64_t e : perm) ps.push_back(t.shape[static_cast<std::size_t>(e)]);
      TensorId x = permute(t.t, perm, ps);
      const std::int64_t n = t.shape[d];
      std::int64_t run = 1, step = 0;
      for (std::size_t i = 0; i < k; ++i) step += run, run *= n;
      Shape ms(ps.begin(), ps.begin() + static_cast<std::ptrdiff_t>(d));
      ms.push_back(run);
      ms.insert(ms.end(), ps.begin() + static_cast<std::ptrdiff_t>(d + k), ps.end());
      x = reshape(x, ms);
      r.shape = ms;
      r.shape[d] = n;
      ir::AttrMap a;
      a.set("dim", ir::AttrValue(static_cast<std::int64_t>(d))), a.set("start", ir::AttrValue(std::int64_t{0})), a.set("step", ir::AttrValue(step));
      r.t = emit("aten.slice.Tensor", {x}, std::move(a), r.shape);
      for (std::size_t e = 0; e < t.labels.size(); ++e)
        if (e <= d || t.labels[e] != l) r.labels.push_back(t.labels[e]);
      t = std::move(r);
    }
    return t;
  }

  // x permuted by `perm` (to shape `ps`), or x itself where perm is the identity.
  TensorId permute(TensorId x, const std::vector<std::int64_t>& perm, const Shape& ps) {
    for (std::size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<std::int64_t>(i)) {
        ir::AttrMap a;
        a.set("dims", list(perm));
        return emit("aten.permute.default", {x}, std::move(a), ps);
      }
    return x;
  }

  template <class Keep>
  Term sum_out(const Term& t, Keep&& keep) {
    Term r{ir::no_tensor, {}, {}};
    std::vector<std::int64_t> dims;
    for (std::size_t d = 0; d < t.labels.size(); ++d) {
      if (keep(t.labels[d])) r.labels.push_back(t.labels[d]), r.shape.push_back(t.shape[d]);
      else dims.push_back(static_cast<std::int64_t>(d));
    }
    if (dims.empty()) return t;
    ir::AttrMap a;
    a.set("dim", list(dims)), a.set("keepdim", ir::AttrValue(false));
    r.t = emit("aten.sum.dim_IntList", {t.t}, std::move(a), r.shape);
    return r;
  }

  // `t` laid out by `order` at `sizes` (permute, then expand where a label is 1 or absent).
  TensorId layout(const Term& t, const std::vector<int>& order, const Shape& sizes) {
    std::vector<std::int64_t> perm;
    Shape ps;
    for (int l : order)
      if (has(t.labels, l)) {
        const auto d = static_cast<std::int64_t>(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
        perm.push_back(d), ps.push_back(t.shape[static_cast<std::size_t>(d)]);
      }
    TensorId x = permute(t.t, perm, ps);
    // Labels the term lacks become size-1 dimensions, then everything expands to `sizes`.
    Shape us;
    for (std::size_t i = 0; i < order.size(); ++i) us.push_back(has(t.labels, order[i]) ? size_of(t, order[i]) : 1);
    if (us != ps) {
      ir::AttrMap a;
      a.set("shape", list(us));
      x = emit("aten.reshape.default", {x}, std::move(a), us);
    }
    if (us != sizes) {
      ir::AttrMap a;
      a.set("size", list(sizes));
      x = emit("aten.expand.default", {x}, std::move(a), sizes);
    }
    return x;
  }

  TensorId reshape(TensorId x, const Shape& s, TensorId into = ir::no_tensor) {
    if (into == ir::no_tensor && g.tensor(x).shape == s) return x;
    ir::AttrMap a;
    a.set("shape", list(s));
    return emit("aten.reshape.default", {x}, std::move(a), s, into);
  }

  Term contract(const Term& a, const Term& b, const std::vector<int>& later) {
    const ops::Contraction c = ops::contraction(a.labels, a.shape, b.labels, b.shape, later);
    const std::vector<int> ao = c.a_order(), bo = c.b_order();
    const std::int64_t nb = c.product(c.batch), m = c.product(c.a_only), k = c.product(c.contracted), n = c.product(c.b_only);
    const TensorId A = reshape(layout(a, ao, c.shape_of(ao)), {nb, m, k}), B = reshape(layout(b, bo, c.shape_of(bo)), {nb, k, n});
    const TensorId C = emit("aten.matmul.default", {A, B}, {}, {nb, m, n});
    Term r{ir::no_tensor, c.out_order(), {}};
    r.shape = c.shape_of(r.labels);
    r.t = reshape(C, r.shape);
    return r;
  }
};

}  // namespace detail

NPUSIM_FUNC int lower_einsum(ir::Graph& g) {
  std::vector<ir::Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  int lowered = 0;
  for (ir::Node& n : nodes) {
    const auto idx = ops::find_op(n.op_type);
    if (!idx || *idx != ops::op_index_v<ops::Einsum> || n.outputs.size() != 1 || n.inputs.empty()) {
      g.nodes.push_back(std::move(n));
      continue;
    }
    const auto a = ops::read_attrs<ops::Einsum::Attrs>(n.attrs, n.op_type);
    std::vector<Shape> shapes;
    for (TensorId t : n.inputs) shapes.push_back(g.tensor(t).shape);
    const ops::EinsumSpec s = ops::parse_einsum(a.equation, shapes);
    bool simple = true;
    for (int l : s.labels()) simple = simple && s.size[static_cast<std::size_t>(l)] > 0;
    if (!simple) {
      g.nodes.push_back(std::move(n));
      continue;
    }
    const TensorId y = n.outputs[0];
    detail::EinsumLowering L{g, g.nodes, n.name, g.tensor(y).dtype};
    const std::size_t k_ops = n.inputs.size();
    std::vector<std::vector<int>> later(k_ops, s.out);
    for (std::size_t k = k_ops; k-- > 1;) {
      later[k - 1] = later[k];
      for (int l : s.in[k]) later[k - 1].push_back(l);
    }
    auto needed_beyond = [&](std::size_t k, int l) {
      if (L.has(s.out, l)) return true;
      for (std::size_t j = 0; j < k_ops; ++j)
        if (j != k && L.has(s.in[j], l)) return true;
      return false;
    };
    detail::EinsumLowering::Term cur{ir::no_tensor, {}, {}};
    for (std::size_t k = 0; k < k_ops; ++k) {
      detail::EinsumLowering::Term t = L.diagonals({n.inputs[k], s.in[k], shapes[k]});
      t = L.sum_out(t, [&](int l) { return needed_beyond(k, l); });
      cur = k == 0 ? t : L.contract(cur, t, later[k]);
      cur = L.sum_out(cur, [&](int l) { return L.has(later[k], l); });
    }
    const Shape os = s.out_shape();
    L.reshape(L.layout(cur, s.out, os), os, y);
    ++lowered;
  }
  renumber_producers(g);
  return lowered;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
