// einsum lowered to the nodes it spells, so that every target runs it with the kernels it has
// (matrix products on the CPU's GEMMs and OpenCL's, the NPU model's MAC array): per operand a
// sum over the labels nothing else needs, then left to right one matmul per further operand over
// [batch, kept, contracted] layouts (permute, expand for size-1 labels, reshape), and a final
// permute/reshape into the node's own output tensor. The same steps as the reference kernel
// (target/reference/kernels/einsum.hpp), here as graph nodes; a label repeated in one operand (a
// diagonal) is first read as a stepped slice of its occurrences merged by a reshape. An equation
// with an empty dimension stays an einsum node (the reference runs it).
#pragma once

#include "npusim/config.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

// Returns the number of einsum nodes lowered.
int lower_einsum(ir::Graph& g);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/lower_einsum_inl.hpp"
#endif
