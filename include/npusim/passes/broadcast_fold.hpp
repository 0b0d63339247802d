// Broadcast folding: an expand whose every reader is a broadcasting pointwise op (binary ops,
// where) is removed, and the readers take the unexpanded tensor: they read it through broadcast
// strides instead of a materialised copy. Applied only when each reader's output shape stays the
// same.
#pragma once

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

int fold_broadcasts(ir::Graph& g);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/broadcast_fold_inl.hpp"
#endif
