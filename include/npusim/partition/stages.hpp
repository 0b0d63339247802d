// Pipeline stages (--stages N, docs/scale-out.md): the graph cut into N contiguous stages, each
// later made into its own partitions by the partitioner (split never puts two stages' nodes in one
// part), so each stage carries only its own weights and its crossings are ordinary transfers.
//
// A stage is a run of nodes in the graph's topological order, so stage s reads only graph inputs,
// weights and tensors of stages before it. The cuts balance a per-node cost: the node's weight
// bytes over the graph's plus its FLOPs over the graph's (each half of the total). An LLM is cut
// between layers only (a layer: the weights whose state_dict key holds `layers.N.`, `h.N.`,
// `blocks.N.`), at the point between two layers where the fewest bytes cross, so a layer's KV
// cache inputs and outputs stay in its stage; any other graph anywhere, near the balanced point,
// where the fewest bytes cross.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/passes/dtype_policy.hpp"

namespace npusim::inline NPUSIM_ABI::partition {

struct StagePlan {
  std::vector<std::int32_t> stage_of;  // by node index
  bool by_layers = false;               // cut between the layers of an LLM
  std::int64_t layers = 0;              // layers found (by_layers)
  // Per stage: the weight bytes its nodes read (a weight two stages read counts in both) and the
  // FLOPs estimate the balance used (2 per multiply-add of linear, matmul, conv and attention; one
  // per output element for every other node).
  std::vector<std::int64_t> weight_bytes;
  std::vector<double> flops;
};

// The layer index a state_dict key belongs to (`model.layers.3.mlp.up_proj.weight` -> 3), or -1.
std::int64_t layer_of_key(std::string_view key);

// FLOPs of one node, the estimate the balance uses.
double node_flops(const ir::Graph& g, const ir::Node& n);

// Cuts g (after the passes) into `stages` contiguous stages. Errors: stages < 1, and more stages
// than the graph has places to cut (nodes, or layers for an LLM), naming both counts.
StagePlan assign_stages(const ir::Graph& g, int stages, const passes::DTypePolicy& pol);

}  // namespace npusim::inline NPUSIM_ABI::partition

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/partition/impl/stages_inl.hpp"
#endif
