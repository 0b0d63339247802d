// Constant folding: a node whose inputs are all known when compiling (IR constants with values,
// outputs of creation ops such as arange/full, and results of earlier folds) is evaluated once and
// becomes a constant of the program. Weights are not known at compile time and graph inputs never
// are (so rotary tables for runtime positions stay runtime work). The evaluation itself is
// supplied by the caller (normally the reference target), so the compiler needs no target.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "npusim/config.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/ir/graph.hpp"

namespace npusim::inline NPUSIM_ABI::passes {

using Evaluator = std::function<std::vector<Tensor>(const ir::Graph&, const ir::Node&, std::span<const Tensor>)>;

int fold_constants(ir::Graph& g, const Evaluator& eval, std::int64_t max_bytes = 1 << 20);

}  // namespace npusim::inline NPUSIM_ABI::passes

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/passes/impl/const_fold_inl.hpp"
#endif
