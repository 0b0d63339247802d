// Definitions for npusim/fusion/pattern.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include <algorithm>

#include "npusim/passes/graph_edit.hpp"
#include "npusim/fusion/pattern.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

NPUSIM_FUNC GraphView::GraphView(const ir::Graph& g)
    : g_(g), ops_(passes::op_indices(g)), uses_(passes::consumers(g)), outs_(passes::graph_output_mask(g)), taken_(g.nodes.size(), false) {}

namespace detail {
// A transpose/permute that only moves size-1 dims keeps the memory order.
inline bool permutation_is_view(const Shape& in, const ops::Ints& perm) {
  std::int64_t last = -1;
  for (auto p : perm) {
    if (in[static_cast<std::size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}
}  // namespace detail

NPUSIM_FUNC bool moves_no_data(const GraphView& v, std::int32_t n) {
  if (n < 0) return false;
  if (ops::op_info(v.op(n)).op_class == ops::OpClass::view) return true;
  const Shape& in = v.tensor(v.in(n, 0)).shape;
  if (v.is<ops::Transpose>(n)) return detail::permutation_is_view(in, ops::Transpose::perm(v.attrs<ops::Transpose>(n), in.size()));
  if (v.is<ops::Permute>(n)) return detail::permutation_is_view(in, ops::Permute::perm(v.attrs<ops::Permute>(n), in.size()));
  if (v.is<ops::Expand>(n)) return in == v.tensor(v.out(n)).shape;
  return false;
}

NPUSIM_FUNC std::int32_t GraphView::only_consumer(TensorId t) const {
  const auto& c = consumers(t);
  return c.size() == 1 && !is_graph_output(t) ? c[0] : -1;
}

NPUSIM_FUNC void GraphView::take(const std::vector<std::int32_t>& nodes) {
  for (auto i : nodes) taken_[static_cast<std::size_t>(i)] = true;
}

NPUSIM_FUNC bool GraphView::is_param(TensorId t) const {
  auto k = g_.tensor(t).kind;
  return k == ir::TensorKind::weight || k == ir::TensorKind::constant;
}

NPUSIM_FUNC std::optional<double> GraphView::scalar_other(std::int32_t i) const {
  if (node(i).inputs.size() != 1) return std::nullopt;
  const ir::AttrValue* v = node(i).attrs.find("other");
  if (!v || !v->is_number()) return std::nullopt;
  return v->as_double();
}

NPUSIM_FUNC std::optional<Kernel> finalize(const GraphView& v, Match m, std::string_view kind, bool early) {
  std::sort(m.nodes.begin(), m.nodes.end());
  if (std::adjacent_find(m.nodes.begin(), m.nodes.end()) != m.nodes.end()) return std::nullopt;
  for (auto n : m.nodes)
    if (n < 0 || v.taken(n)) return std::nullopt;
  const std::int32_t last = m.nodes.back();
  auto member = [&](std::int32_t n) { return std::binary_search(m.nodes.begin(), m.nodes.end(), n); };
  Kernel k;
  k.kind = std::string(kind);
  k.nodes = m.nodes;
  k.params = std::move(m.params);
  for (auto n : m.nodes) {
    for (TensorId t : v.node(n).outputs) {
      bool outside = v.is_graph_output(t);
      for (auto c : v.consumers(t)) {
        if (member(c)) continue;
        if (c < last && !early) return std::nullopt;  // someone outside needs it before the kernel runs
        outside = true;
      }
      if (outside) k.outputs.push_back(t);
    }
  }
  if (k.outputs.empty()) return std::nullopt;
  // Inputs: the pattern's order; any further outside tensor a member reads is appended.
  k.inputs = std::move(m.inputs);
  for (auto n : m.nodes)
    for (TensorId t : v.node(n).inputs) {
      std::int32_t p = v.producer(t);
      if (p >= 0 && member(p)) continue;
      if (std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end()) k.inputs.push_back(t);
    }
  // Running before its last member is sound only where everything it reads exists at its first.
  if (early)
    for (TensorId t : k.inputs)
      if (v.producer(t) >= m.nodes.front()) return std::nullopt;
  return k;
}

}  // namespace npusim::inline NPUSIM_ABI::fusion
