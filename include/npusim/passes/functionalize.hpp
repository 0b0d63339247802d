// Writes and alias ops made plain dataflow, before anything else runs.
//
// functionalize_writes: the exported graph keeps in-place writes (copy_, zero_, fill_) as nodes
// whose later readers read the written tensor, not the write's output (swin's attention mask:
// new_zeros, then `mask[h0:h1, w0:w1] = k` as slice -> slice -> copy_). Each write through a chain
// of slices and views of a base tensor becomes: the write's value (its functional op), then one
// slice_scatter (or view back) per chain link, rebuilding each level up to the base; every node
// after the write reads the new values of the base and of the chain's views. A view taken before
// the write and read after it through another chain is not updated (no model seen does that).
// The interpreter applies this pass too, so the oracle and the compiled program agree.
//
// canonicalize_aliases: swapaxes -> transpose, expand_as -> expand, type_as -> _to_copy,
// new_zeros / zero -> zeros, fill -> full, copy -> [expand] [-> _to_copy]: every target then runs
// them with the kernels it already has, and creation ops fold at compile time.
#pragma once

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

// Whether the graph has a write op (copy_, zero_, fill_).
bool has_writes(const ir::Graph& g);

// Returns the number of writes rewritten.
int functionalize_writes(ir::Graph& g);

// Returns the number of nodes rewritten.
int canonicalize_aliases(ir::Graph& g);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/functionalize_inl.hpp"
#endif
