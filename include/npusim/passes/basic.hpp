// The clean-up passes: in-place normalisation, no-op/alias removal, dead-code elimination.
// Each returns how many nodes it changed (reported by `npusim compile` and checked by tests).
#pragma once

#include "npusim/passes/graph_edit.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

// aten.relu_.default -> aten.relu.default (and add_, silu_, hardtanh_, dropout_, ...): in the
// exported functional graph an in-place op's output is already a new tensor.
inline int normalize_inplace(ir::Graph& g) {
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

// Drops nodes that compute nothing: _assert_tensor_metadata, alias/detach, contiguous/clone
// (npusim tensors are always contiguous), dropout in eval mode, and getitem (readers are rewired
// to the picked output). A removed node whose output is a graph output becomes an alias instead,
// so output names survive.
inline int remove_noops(ir::Graph& g) {
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

// Removes nodes whose outputs no graph output needs.
inline int eliminate_dead_code(ir::Graph& g) {
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
