// What fusion patterns are made of. A pattern is a policy struct:
//
//   struct RmsNorm {
//     static constexpr std::string_view name = "rmsnorm";
//     static std::optional<fusion::Match> match(const fusion::GraphView& v, std::int32_t node);
//   };
//
// match() looks at the graph around `node` (any node of the pattern may be the anchor) and
// returns the member nodes, the kernel inputs in the order its kernels expect, and parameters.
// finalize() then applies the rules every fusion must obey: members not yet fused, internal
// tensors read only inside the kernel, and every outside reader of a kernel output placed after
// the kernel's last member (the kernel runs there), which keeps the schedule a topological order.
#pragma once

#include <algorithm>
#include <optional>

#include "npusim/fusion/kernel.hpp"
#include "npusim/passes/graph_edit.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

using ir::TensorId;

struct Match {
  std::vector<std::int32_t> nodes;
  std::vector<TensorId> inputs;
  ir::AttrMap params;
};

class GraphView {
 public:
  explicit GraphView(const ir::Graph& g)
      : g_(g), ops_(passes::op_indices(g)), uses_(passes::consumers(g)), outs_(passes::graph_output_mask(g)), taken_(g.nodes.size(), false) {}

  const ir::Graph& graph() const { return g_; }
  const ir::Node& node(std::int32_t i) const { return g_.nodes[static_cast<std::size_t>(i)]; }
  std::size_t op(std::int32_t i) const { return ops_[static_cast<std::size_t>(i)]; }
  template <class Op>
  bool is(std::int32_t i) const {
    return i >= 0 && static_cast<std::size_t>(i) < ops_.size() && ops_[static_cast<std::size_t>(i)] == ops::op_index_v<Op>;
  }
  template <class Op>
  typename Op::Attrs attrs(std::int32_t i) const {
    return ops::read_attrs<typename Op::Attrs>(node(i).attrs, node(i).op_type);
  }
  const ir::TensorInfo& tensor(TensorId t) const { return g_.tensor(t); }
  std::int32_t producer(TensorId t) const { return g_.tensor(t).producer; }
  const std::vector<std::int32_t>& consumers(TensorId t) const { return uses_[static_cast<std::size_t>(t)]; }
  bool is_graph_output(TensorId t) const { return outs_[static_cast<std::size_t>(t)]; }
  // The one node reading `t` (and `t` is not a graph output), or -1.
  std::int32_t only_consumer(TensorId t) const {
    const auto& c = consumers(t);
    return c.size() == 1 && !is_graph_output(t) ? c[0] : -1;
  }
  TensorId out(std::int32_t i, std::size_t k = 0) const { return node(i).outputs.at(k); }
  TensorId in(std::int32_t i, std::size_t k) const { return node(i).inputs.at(k); }
  bool taken(std::int32_t i) const { return taken_[static_cast<std::size_t>(i)]; }
  void take(const std::vector<std::int32_t>& nodes) {
    for (auto i : nodes) taken_[static_cast<std::size_t>(i)] = true;
  }
  std::size_t size() const { return g_.nodes.size(); }
  bool is_param(TensorId t) const {
    auto k = g_.tensor(t).kind;
    return k == ir::TensorKind::weight || k == ir::TensorKind::constant;
  }
  // A scalar `other` attribute on a one-input binary node, if present.
  std::optional<double> scalar_other(std::int32_t i) const {
    if (node(i).inputs.size() != 1) return std::nullopt;
    const ir::AttrValue* v = node(i).attrs.find("other");
    if (!v || !v->is_number()) return std::nullopt;
    return v->as_double();
  }

 private:
  const ir::Graph& g_;
  std::vector<std::size_t> ops_;
  std::vector<std::vector<std::int32_t>> uses_;
  std::vector<bool> outs_;
  std::vector<bool> taken_;
};

inline std::optional<Kernel> finalize(const GraphView& v, Match m, std::string_view kind) {
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
        if (c < last) return std::nullopt;  // someone outside needs it before the kernel runs
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
  return k;
}

}  // namespace npusim::inline NPUSIM_ABI::fusion
