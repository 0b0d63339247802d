// Channel padding for targets that want NCHW channel counts aligned (a multiple of 64 bytes of
// the stored type). Tensors produced by convolutions, and by the channel-preserving ops that
// follow them (pointwise ops, pools), get C rounded up; the padded channels are zero and stay
// zero (zero weights and bias, relu(0) = 0, pools of zeros). A consumer outside that domain, and
// a graph output, reads an un-padded slice (original name, original shape), so outputs are
// unchanged. Conv weights and biases are padded through `pad` recipes.
#pragma once

#include <vector>

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"
#include "npusim/weights/recipes.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

int pad_channels(ir::Graph& g, std::int64_t align_elems, std::vector<weights::Recipe>& recipes);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/pad_channels_inl.hpp"
#endif
