// Editing an ir::Graph in place: consumer lists, batched tensor rewiring, node removal with
// compaction. Passes mark what to change and apply it once, so each pass stays O(nodes).
#pragma once

#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

using ir::TensorId;

// Consumers of every tensor (node indices, in order; a node reading a tensor twice appears twice).
std::vector<std::vector<std::int32_t>> consumers(const ir::Graph& g);

std::vector<bool> graph_output_mask(const ir::Graph& g);

// Op index of every node (the graph must be checked already).
std::vector<std::size_t> op_indices(const ir::Graph& g);

void renumber_producers(ir::Graph& g);

// A batch of edits: tensor replacements (every reader of `from` reads `to` instead) and node
// deletions. apply() rewires node inputs (graph outputs keep their tensors: a pass that removes a
// graph output's producer must keep a node for it), drops dead nodes and renumbers producers.
class Edit {
 public:
  explicit Edit(const ir::Graph& g);
  // Tensors added to the graph after the Edit was made are fine: they are never remapped.
  void replace(TensorId from, TensorId to);
  void remove(std::size_t node) { dead_[node] = true; }
  bool removed(std::size_t node) const { return dead_[node]; }
  TensorId resolve(TensorId t) const;
  bool empty() const;

  void apply(ir::Graph& g) const;

 private:
  std::vector<TensorId> remap_;
  std::vector<bool> dead_;
};

// A fresh tensor name that does not clash with existing ones.
std::string fresh_name(const ir::Graph& g, const std::string& base);

// Checks the invariants every pass must keep: inputs defined before use, producers consistent,
// and every node's shapes agree with its op (so a buggy pass fails at compile time, not later).
void verify(const ir::Graph& g, const char* after_pass);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/graph_edit_inl.hpp"
#endif
