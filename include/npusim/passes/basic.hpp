// The clean-up passes: in-place normalisation, no-op/alias removal, dead-code elimination.
// Each returns how many nodes it changed (reported by `npusim compile` and checked by tests).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

// aten.relu_.default -> aten.relu.default (and add_, silu_, hardtanh_, dropout_, ...): in the
// exported functional graph an in-place op's output is already a new tensor.
int normalize_inplace(ir::Graph& g);

// Drops nodes that compute nothing: _assert_tensor_metadata, alias/detach, contiguous/clone
// (npusim tensors are always contiguous), dropout in eval mode, and getitem (readers are rewired
// to the picked output). A removed node whose output is a graph output becomes an alias instead,
// so output names survive.
int remove_noops(ir::Graph& g);

// Removes nodes whose outputs no graph output needs.
int eliminate_dead_code(ir::Graph& g);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/basic_inl.hpp"
#endif
