// Definitions for npusim/passes/graph_edit.hpp (NPUSIM_FUNC: npusim/config.hpp).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ops/registry.hpp"
#include "npusim/passes/graph_edit.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

NPUSIM_FUNC std::vector<std::vector<std::int32_t>> consumers(const ir::Graph& g) {
  std::vector<std::vector<std::int32_t>> c(g.tensors.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    for (TensorId t : g.nodes[i].inputs) c[static_cast<std::size_t>(t)].push_back(static_cast<std::int32_t>(i));
  return c;
}

NPUSIM_FUNC std::vector<bool> graph_output_mask(const ir::Graph& g) {
  std::vector<bool> m(g.tensors.size(), false);
  for (TensorId t : g.outputs) m[static_cast<std::size_t>(t)] = true;
  return m;
}

NPUSIM_FUNC std::vector<std::size_t> op_indices(const ir::Graph& g) {
  std::vector<std::size_t> r;
  r.reserve(g.nodes.size());
  for (const ir::Node& n : g.nodes) r.push_back(ops::require_op(n));
  return r;
}

NPUSIM_FUNC void renumber_producers(ir::Graph& g) {
  for (auto& t : g.tensors)
    if (t.kind == ir::TensorKind::intermediate) t.producer = -1;
  for (std::size_t i = 0; i < g.nodes.size(); ++i)
    for (std::size_t k = 0; k < g.nodes[i].outputs.size(); ++k) {
      auto& t = g.tensor(g.nodes[i].outputs[k]);
      t.producer = static_cast<std::int32_t>(i);
      t.producer_output = static_cast<std::int32_t>(k);
    }
}

NPUSIM_FUNC Edit::Edit(const ir::Graph& g) : remap_(g.tensors.size()), dead_(g.nodes.size(), false) {
  for (std::size_t i = 0; i < remap_.size(); ++i) remap_[i] = static_cast<TensorId>(i);
}

NPUSIM_FUNC void Edit::replace(TensorId from, TensorId to) {
  while (remap_.size() <= static_cast<std::size_t>(from)) remap_.push_back(static_cast<TensorId>(remap_.size()));
  remap_[static_cast<std::size_t>(from)] = to;
}

NPUSIM_FUNC TensorId Edit::resolve(TensorId t) const {
  while (static_cast<std::size_t>(t) < remap_.size() && remap_[static_cast<std::size_t>(t)] != t) t = remap_[static_cast<std::size_t>(t)];
  return t;
}

NPUSIM_FUNC bool Edit::empty() const {
  for (bool d : dead_) if (d) return false;
  for (std::size_t i = 0; i < remap_.size(); ++i) if (remap_[i] != static_cast<TensorId>(i)) return false;
  return true;
}

NPUSIM_FUNC void Edit::apply(ir::Graph& g) const {
  std::vector<ir::Node> kept;
  kept.reserve(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (dead_[i]) continue;
    ir::Node n = std::move(g.nodes[i]);
    for (TensorId& t : n.inputs) t = resolve(t);
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  renumber_producers(g);
}

NPUSIM_FUNC std::string fresh_name(const ir::Graph& g, const std::string& base) {
  if (!g.find(base)) return base;
  for (int i = 1;; ++i)
    if (!g.find(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

NPUSIM_FUNC void verify(const ir::Graph& g, const char* after_pass) {
  std::vector<bool> defined(g.tensors.size(), false);
  for (std::size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].kind != ir::TensorKind::intermediate) defined[i] = true;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    for (TensorId t : n.inputs)
      if (!defined[static_cast<std::size_t>(t)])
        throw Error(ErrorCode::runtime, std::string("compiler pass '") + after_pass + "' broke the graph: input used before it is produced (npusim bug)",
                    {.node = n.name, .tensor = g.tensor(t).name});
    for (TensorId t : n.outputs) defined[static_cast<std::size_t>(t)] = true;
    try {
      ops::check_node(g, n);
    } catch (Error& e) {
      throw Error(ErrorCode::runtime, std::string("compiler pass '") + after_pass + "' broke a node (npusim bug): " + e.message(),
                  {.node = n.name});
    }
  }
  for (TensorId t : g.outputs)
    if (!defined[static_cast<std::size_t>(t)])
      throw Error(ErrorCode::runtime, std::string("compiler pass '") + after_pass + "' lost a graph output (npusim bug)", {.tensor = g.tensor(t).name});
}

}  // namespace npusim::inline NPUSIM_ABI::passes
