// Partitioning: nodes go to the target or the fallback (node_support), then into contiguous,
// cycle-free parts. Nodes are ordered topologically with a preference for staying on the current
// side, so independent branches do not fragment the plan. Each part becomes a sub-graph whose
// inputs are graph inputs or tensors of earlier parts; the plan lists every transfer with its size.
// With pipeline stages (stages.hpp), a part never spans two stages: stage s's parts come before
// stage s+1's.
#pragma once

#include <map>

#include "npusim/config.hpp"
#include "npusim/partition/support.hpp"
#include "npusim/passes/dtype_policy.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

struct Part {
  bool fallback = false;
  std::vector<std::int32_t> nodes;  // original node indices, in execution order
  std::int32_t stage = 0;           // pipeline stage (0 without stages)
};

// stage_of (by node, non-decreasing along every edge; null: one stage) keeps stages apart.
std::vector<Part> split(const ir::Graph& g, const std::vector<NodeSupport>& sup, const std::vector<std::int32_t>* stage_of = nullptr);

// The sub-graph of one part: its nodes, the tensors they touch, inputs = what it reads from outside
// (graph inputs and other parts' tensors), outputs = what later parts or the caller need.
ir::Graph extract(const ir::Graph& g, const std::vector<std::int32_t>& nodes, const std::vector<bool>& needed_outside);

struct Plan {
  std::vector<Part> parts;
  std::vector<ir::Graph> graphs;  // one per part
  std::vector<Transfer> transfers;
};

Plan make_plan(const ir::Graph& g, const std::vector<NodeSupport>& sup, const passes::DTypePolicy& pol,
               const std::vector<std::int32_t>* stage_of = nullptr);

}  // namespace npusim::inline NPUSIM_ABI::partition

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/partition/impl/partitioner_inl.hpp"
#endif
