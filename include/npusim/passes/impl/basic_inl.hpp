// Definitions for npusim/passes/basic.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"
#include "npusim/passes/basic.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC int normalize_inplace(ir::Graph& g) {
  int changed = 0;
  for (ir::Node& n : g.nodes) {
    // "aten.<name>_.<overload>" -> "aten.<name>.<overload>" when that maps to the same policy.
    auto first = n.op_type.find('.');
    auto second = first == std::string::npos ? std::string::npos : n.op_type.find('.', first + 1);
    if (second == std::string::npos || second == 0 || n.op_type[second - 1] != '_') continue;
    std::string functional = n.op_type.substr(0, second - 1) + n.op_type.substr(second);
    auto a = ops::find_op(n.op_type), b = ops::find_op(functional);
    if (a && b && *a == *b) {
      n.op_type = functional;
      ++changed;
    }
  }
  return changed;
}

NPUSIM_FUNC int remove_noops(ir::Graph& g) {
  const auto outs = graph_output_mask(g);
  Edit e(g);
  int removed = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    ir::Node& n = g.nodes[i];
    auto idx = ops::require_op(n);
    std::optional<TensorId> source;
    if (idx == ops::op_index_v<ops::AssertMetadata>) {
      e.remove(i), ++removed;
      continue;
    }
    if (idx == ops::op_index_v<ops::Alias> || idx == ops::op_index_v<ops::Contiguous> || idx == ops::op_index_v<ops::Dropout>) {
      source = n.inputs.at(0);
    } else if (idx == ops::op_index_v<ops::GetItem>) {
      auto a = ops::read_attrs<ops::GetItem::Attrs>(n.attrs, n.op_type);
      source = n.inputs.at(static_cast<std::size_t>(a.index));
    }
    if (!source) continue;
    TensorId out = n.outputs.at(0);
    if (outs[static_cast<std::size_t>(out)]) {
      if (idx == ops::op_index_v<ops::Alias> && n.inputs.size() == 1) continue;  // already minimal
      n.op_type = "aten.alias.default";  // keep the output name, zero-copy
      n.inputs = {*source};
      n.attrs = {};
      ++removed;
      continue;
    }
    e.replace(out, *source);
    e.remove(i);
    ++removed;
  }
  e.apply(g);
  return removed;
}

NPUSIM_FUNC int eliminate_dead_code(ir::Graph& g) {
  std::vector<bool> live(g.tensors.size(), false);
  for (TensorId t : g.outputs) live[static_cast<std::size_t>(t)] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (std::size_t i = g.nodes.size(); i-- > 0;) {
    const ir::Node& n = g.nodes[i];
    for (TensorId t : n.outputs) keep[i] = keep[i] || live[static_cast<std::size_t>(t)];
    if (keep[i])
      for (TensorId t : n.inputs) live[static_cast<std::size_t>(t)] = true;
  }
  Edit e(g);
  int removed = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    if (!keep[i]) e.remove(i), ++removed;
  e.apply(g);
  return removed;
}

}  // namespace npusim::inline NPUSIM_ABI::passes
