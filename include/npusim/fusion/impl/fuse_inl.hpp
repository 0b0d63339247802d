// Definitions for npusim/fusion/fuse.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/fusion/fuse.hpp"

namespace npusim::inline NPUSIM_ABI::fusion {

NPUSIM_FUNC bool permutation_is_view(const Shape& in, const ops::Ints& perm) {
  std::int64_t last = -1;
  for (auto p : perm) {
    if (in[static_cast<std::size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

NPUSIM_FUNC bool is_view_node(const GraphView& v, std::int32_t n, const passes::DTypePolicy& pol) {
  const auto& info = ops::op_info(v.op(n));
  const ir::Node& node = v.node(n);
  if (info.op_class == ops::OpClass::view) return true;
  if (v.is<ops::ToDtype>(n)) return pol.storage(v.tensor(node.inputs[0]).dtype) == pol.storage(v.tensor(node.outputs[0]).dtype);
  if (v.is<ops::Transpose>(n))
    return permutation_is_view(v.tensor(node.inputs[0]).shape, ops::Transpose::perm(v.attrs<ops::Transpose>(n), v.tensor(node.inputs[0]).shape.size()));
  if (v.is<ops::Permute>(n))
    return permutation_is_view(v.tensor(node.inputs[0]).shape, ops::Permute::perm(v.attrs<ops::Permute>(n), v.tensor(node.inputs[0]).shape.size()));
  if (v.is<ops::Expand>(n)) return v.tensor(node.inputs[0]).shape == v.tensor(node.outputs[0]).shape;
  return false;
}

NPUSIM_FUNC std::vector<Kernel> fuse(const ir::Graph& g, std::span<const PatternInfo> patterns, const passes::DTypePolicy& pol,
                                     const FuseOptions& opt) {
  GraphView v(g);
  std::vector<Kernel> ks;
  for (const PatternInfo& p : patterns) {
    if (opt.disabled.count(p.name)) continue;
    for (std::int32_t i = 0; i < static_cast<std::int32_t>(v.size()); ++i) {
      if (v.taken(i)) continue;
      auto m = p.match(v, i);
      if (!m) continue;
      auto k = finalize(v, std::move(*m), p.name);
      if (!k) continue;
      v.take(k->nodes);
      ks.push_back(std::move(*k));
    }
  }
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(v.size()); ++i) {
    if (v.taken(i)) continue;
    Kernel k;
    k.kind = is_view_node(v, i, pol) ? "view" : std::string(ops::op_info(v.op(i)).id);
    k.nodes = {i};
    for (TensorId t : v.node(i).inputs)
      if (std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end()) k.inputs.push_back(t);
    k.outputs = v.node(i).outputs;
    ks.push_back(std::move(k));
  }
  std::sort(ks.begin(), ks.end(), [](const Kernel& a, const Kernel& b) { return a.nodes.back() < b.nodes.back(); });
  return ks;
}

}  // namespace npusim::inline NPUSIM_ABI::fusion
