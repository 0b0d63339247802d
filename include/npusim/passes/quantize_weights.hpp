// Block-quantized linear weights (`compile --weights-dtype q8|q4`, docs/quantization.md): marks
// linear nodes to compute with their weight quantized to q8_0 or q4_0 blocks, which the targets'
// kernels do when they bind the weight. The graph's weights themselves are unchanged, so any float
// checkpoint still binds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

struct WeightQuantOptions {
  std::string format;             // "q8_0" or "q4_0" ("q8", "q4" accepted); empty: none
  std::vector<std::string> keep;  // weights that stay as they are: a state_dict key or a part of one ("lm_head")
};

// Sets weight_format on every linear whose weight (input 1) is a weight tensor of rank 2, except
// those `keep` names. Returns how many. An unknown format, or a keep entry that names no linear's
// weight, is an error (a flag that changes nothing would be silently ignored).
std::int64_t quantize_linear_weights(ir::Graph& g, const WeightQuantOptions& o);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/quantize_weights_inl.hpp"
#endif
